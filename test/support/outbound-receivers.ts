import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { createHmac, timingSafeEqual } from "node:crypto";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";
import { simpleParser, type ParsedMail } from "mailparser";
import { rest, type RestResponse } from "./clients.js";

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The X-Webhook-Signature checked out against the secret of the path's route (null: none expected). */
  signatureValid: boolean | null;
}

/** What a route answers: a status per call (the last repeats), extra headers, and the signing secret it checks. */
export interface Route {
  statuses: number[];
  headers?: Record<string, string>;
  secret?: string;
  /** Takes the request and never answers it (a receiver that hangs, or a sender about to die). */
  hang?: boolean;
}

/**
 * A local HTTP server standing in for webhook receivers and SMS/push gateways. It checks the
 * signature the way docs/notifications.md tells receivers to: HMAC-SHA256 over `<timestamp>.<raw body>`.
 */
export async function startHttpReceiver(host = "127.0.0.1"): Promise<{ url: string; port: number; routes: Map<string, Route>; received: Received[]; close(): Promise<void> }> {
  const routes = new Map<string, Route>();
  const calls = new Map<string, number>();
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = req.url ?? "/";
      const body = Buffer.concat(chunks).toString("utf8");
      const route = routes.get(path) ?? { statuses: [404] };
      let signatureValid: boolean | null = null;
      if (route.secret) {
        const ts = String(req.headers["x-webhook-timestamp"] ?? "");
        const expected = Buffer.from(`sha256=${createHmac("sha256", route.secret).update(`${ts}.${body}`).digest("hex")}`);
        const got = Buffer.from(String(req.headers["x-webhook-signature"] ?? ""));
        signatureValid = got.length === expected.length && timingSafeEqual(got, expected) && Math.abs(Date.now() / 1000 - Number(ts)) < 300;
      }
      received.push({ path, headers: req.headers, body, signatureValid });
      if (route.hang) return;
      const n = calls.get(path) ?? 0;
      calls.set(path, n + 1);
      const status = signatureValid === false ? 401 : route.statuses[Math.min(n, route.statuses.length - 1)];
      res.writeHead(status, route.headers ?? {}).end(status < 300 ? JSON.stringify({ id: `msg-${received.length}` }) : "");
    });
  });
  server.listen(0, host);
  await once(server, "listening");
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host}:${port}`,
    port,
    routes,
    received,
    close: () =>
      new Promise((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

/** An SMTP server in the test process that requires a login and parses every message it takes. */
export async function startSmtpServer(user: string, password: string): Promise<{ port: number; mails: ParsedMail[]; close(): Promise<void> }> {
  const mails: ParsedMail[] = [];
  const server = new SMTPServer({
    disabledCommands: ["STARTTLS"],
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, cb) {
      if (auth.username === user && auth.password === password) cb(null, { user });
      else cb(new Error("Invalid username or password"));
    },
    onData(stream, _session, cb) {
      simpleParser(stream).then(
        (mail) => {
          mails.push(mail);
          cb();
        },
        (err) => cb(err),
      );
    },
  });
  server.listen(0, "127.0.0.1");
  await once(server.server, "listening");
  return {
    port: (server.server.address() as AddressInfo).port,
    mails,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

/**
 * Points the platform e-mail settings (spec 2.13) at a sink from startSmtpServer("mailer",
 * "smtp-secret-pass"), as the platform owner's admin would; `from` becomes from_email.
 */
export async function putPlatformEmailSettings(baseUrl: string, ownerApiKey: string, smtpPort: number, from: string): Promise<RestResponse> {
  return rest(baseUrl, "PUT", "/api/v1/platform-settings", {
    key: ownerApiKey,
    body: {
      category: "email",
      settings: [
        { key: "smtp_host", value: "127.0.0.1" },
        { key: "smtp_port", value: String(smtpPort) },
        { key: "smtp_user", value: "mailer" },
        { key: "smtp_password", value: "smtp-secret-pass", encrypted: true },
        { key: "from_email", value: from },
      ],
    },
  });
}
