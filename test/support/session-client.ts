import type { ParsedMail } from "mailparser";
import { rest, type RestResponse } from "./clients.js";

/** The `ds_session=<token>` pair of a response's Set-Cookie, as a browser would send it back; null when none was set. */
export function sessionCookie(res: RestResponse): string | null {
  const header = res.headers.get("set-cookie");
  if (!header) return null;
  const pair = header.split(";")[0];
  return pair.startsWith("ds_session=") && pair !== "ds_session=" ? pair : null;
}

/** The claims of a session cookie, read without verifying (the test compares sid and exp). */
export function sessionClaims(cookie: string): { sid: string; exp: number; tv: number; role: string } {
  const token = cookie.slice("ds_session=".length);
  return JSON.parse(Buffer.from(token.split(".")[1], "base64url").toString("utf8"));
}

/** Waits for a mail to `to` whose subject matches, among those the SMTP sink received. */
export async function waitForMail(mails: ParsedMail[], to: string, subject: RegExp, timeoutMs = 15_000): Promise<ParsedMail> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const mail = mails.find((m) => subject.test(m.subject ?? "") && JSON.stringify(m.to).toLowerCase().includes(to.toLowerCase()));
    if (mail) {
      mails.splice(mails.indexOf(mail), 1);
      return mail;
    }
    if (Date.now() > deadline) throw new Error(`no mail "${subject}" to ${to} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The token of the link in a mail. */
export function linkToken(mail: ParsedMail): { link: string; token: string } {
  const m = /(\S+\?token=([A-Za-z0-9_-]+))/.exec(mail.text ?? "");
  if (!m) throw new Error(`no link in mail: ${mail.text}`);
  return { link: m[1], token: m[2] };
}

/** A JSON call to an /api/auth route, with the session cookie when given. */
export function auth(baseUrl: string, method: string, path: string, body?: unknown, cookie?: string | null, headers: Record<string, string> = {}): Promise<RestResponse> {
  return rest(baseUrl, method, path, { body, headers: { ...(cookie ? { cookie } : {}), ...headers } });
}
