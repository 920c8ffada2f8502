import type { Dispatcher, OutboundMessage } from "../notifications/outbound.js";
import type { Logger } from "../platform/logger.js";

/**
 * The transactional mails of password sign-in, sent through the one dispatcher over the platform's
 * e-mail settings (spec 2.13). Sending runs after the answer: a route answers the same, and in about
 * the same time, whether a mail went out or not, so neither the answer nor its timing says whether
 * an address is registered. `settled()` waits for the sends in flight (shutdown, tests).
 */
export class AccountMailer {
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly dispatcher: Dispatcher,
    private readonly publicUrl: string,
    private readonly logger: Logger,
  ) {}

  verification(tenantId: string, to: string, name: string, tokenId: string, token: string, lifetimeHours: number): void {
    const link = `${this.publicUrl}/api/auth/verify-email?token=${encodeURIComponent(token)}`;
    this.send(tenantId, to, {
      kind: "auth.verify_email",
      dedupeKey: `auth:verify_email:${tokenId}`,
      subject: "Verify your e-mail address",
      text: [
        `Hello ${name},`,
        "",
        "Confirm that this address is yours to finish signing up:",
        link,
        "",
        `The link works once and expires in ${lifetimeHours} hours. If you did not sign up, ignore this mail.`,
      ].join("\n"),
      payload: {},
      holdsCredential: true,
    });
  }

  passwordReset(tenantId: string, to: string, workspace: string, tokenId: string, token: string, lifetimeMinutes: number): void {
    const link = `${this.publicUrl}/api/auth/password-reset/confirm?token=${encodeURIComponent(token)}`;
    this.send(tenantId, to, {
      kind: "auth.password_reset",
      dedupeKey: `auth:password_reset:${tokenId}`,
      subject: "Reset your password",
      text: [
        `Someone asked to reset the password of this address in the workspace "${workspace}".`,
        "",
        "Choose a new password here:",
        link,
        "",
        `The link works once and expires in ${lifetimeMinutes} minutes. Signing in with the new password ends every other session.`,
        "If you did not ask for this, ignore this mail: your password stays as it is.",
      ].join("\n"),
      payload: {},
      holdsCredential: true,
    });
  }

  /** Registration of an address that already has an account: its owner is told, nothing is created. */
  alreadyRegistered(tenantId: string, to: string, dedupeKey: string): void {
    this.send(tenantId, to, {
      kind: "auth.already_registered",
      dedupeKey,
      subject: "You already have an account",
      text: [
        "Someone tried to sign up with this address, which already has an account.",
        "",
        `If it was you, sign in at ${this.publicUrl}, or reset your password: ${this.publicUrl}/api/auth/password-reset`,
        "If it was not you, ignore this mail: nothing has changed.",
      ].join("\n"),
      payload: {},
    });
  }

  async settled(): Promise<void> {
    await Promise.all([...this.inFlight]);
  }

  private send(tenantId: string, to: string, message: OutboundMessage): void {
    const sending = this.dispatcher
      .dispatch(tenantId, [{ type: "email", target: to }], message)
      .then(([result]) => {
        if (!result.accepted) this.logger.warn({ tenantId, kind: message.kind, error: result.error }, "account mail not delivered");
      })
      .catch((err) => this.logger.error({ err, tenantId, kind: message.kind }, "account mail failed"))
      .finally(() => this.inFlight.delete(sending));
    this.inFlight.add(sending);
  }
}
