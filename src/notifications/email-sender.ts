import { isIP } from "node:net";
import nodemailer from "nodemailer";
import type { OutboundConfig } from "../config.js";
import type { OutboundMessage } from "./outbound.js";
import { forbiddenAddresses, OutboundBlockedError, resolveAllowed } from "./outbound-guard.js";
import { SendError, type SendOutcome } from "./send-outcome.js";

export interface SmtpSettings {
  host: string;
  port: number;
  /** TLS from the first byte (port 465); otherwise STARTTLS when the server offers it. */
  secure: boolean;
  user?: string;
  password?: string;
  from: string;
}

/**
 * An e-mail provider's SMTP settings: its own config where it sets them, the platform's e-mail
 * settings (spec 2.13: smtp_host, smtp_port, smtp_user, smtp_password, from_email; smtp_secure ours)
 * for the rest.
 */
export function smtpSettings(own: Record<string, unknown>, platform: Record<string, string>): SmtpSettings {
  const host = (own.host as string | undefined) ?? platform.smtp_host;
  if (!host) throw new SendError("no SMTP host: set config.host on the provider or smtp_host in the platform e-mail settings", true);
  const from = (own.from as string | undefined) ?? platform.from_email;
  if (!from) throw new SendError("no sender: set config.from on the provider or from_email in the platform e-mail settings", true);
  const port = (own.port as number | undefined) ?? (platform.smtp_port ? Number(platform.smtp_port) : undefined);
  const secure = (own.secure as boolean | undefined) ?? (platform.smtp_secure ? platform.smtp_secure === "true" : port === 465);
  const user = (own.user as string | undefined) ?? platform.smtp_user;
  const password = own.user !== undefined ? (own.password as string | undefined) : ((own.password as string | undefined) ?? platform.smtp_password);
  return { host, port: port && Number.isInteger(port) ? port : secure ? 465 : 587, secure, user, password, from };
}

/** SMTP answers 4xx for "try later"; 5xx and refused credentials will answer the same again. */
function failure(err: Error & { responseCode?: number; code?: string }): SendError {
  if (err instanceof OutboundBlockedError) return new SendError(err.message, true);
  const permanent = err.code === "EAUTH" || err.code === "EENVELOPE" || (err.responseCode !== undefined && err.responseCode >= 500);
  return new SendError(`SMTP ${err.responseCode ?? err.code ?? "error"}: ${err.message}`.slice(0, 500), permanent);
}

/**
 * One e-mail through nodemailer. The host is resolved here, through the SSRF guard, and nodemailer
 * connects to that address (TLS still verifies the name), since it would otherwise resolve the name
 * itself, where the guard cannot see. The Message-ID is the delivery's, the same on every retry.
 */
export async function sendEmail(smtp: SmtpSettings, to: string[], message: OutboundMessage, deliveryId: string, outbound: OutboundConfig): Promise<SendOutcome> {
  try {
    const address = await resolveAllowed(smtp.host, forbiddenAddresses(outbound.allowPrivate));
    const transport = nodemailer.createTransport({
      host: address,
      port: smtp.port,
      secure: smtp.secure,
      auth: smtp.user ? { user: smtp.user, pass: smtp.password ?? "" } : undefined,
      tls: isIP(smtp.host) ? undefined : { servername: smtp.host },
      connectionTimeout: outbound.timeoutMs,
      greetingTimeout: outbound.timeoutMs,
      socketTimeout: outbound.timeoutMs,
    });
    const domain = smtp.from.split("@")[1] ?? "decisioning.local";
    const info = await transport.sendMail({
      from: smtp.from,
      to,
      subject: message.subject,
      text: message.text,
      messageId: `<${deliveryId}@${domain}>`,
      attachments: message.attachments?.map((a) => ({ filename: a.fileName, contentType: a.contentType, content: Buffer.from(a.content) })),
      headers: { "X-Notification-Kind": message.kind },
    });
    transport.close();
    return { messageId: info.messageId };
  } catch (err) {
    throw failure(err as Error);
  }
}
