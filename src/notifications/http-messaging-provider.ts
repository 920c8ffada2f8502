import type { OutboundConfig } from "../config.js";
import type { OutboundMessage } from "./outbound.js";
import { SendError, type SendOutcome } from "./send-outcome.js";
import { postDelivery } from "./webhook-sender.js";

export type MessagingChannel = "sms" | "push";

/**
 * SMS and push go through this interface, so that a vendor (Twilio, FCM, ...) is one more
 * implementation; the one shipped is the generic webhook below.
 */
export interface HttpMessagingProvider {
  readonly channel: MessagingChannel;
  send(message: OutboundMessage, deliveryId: string): Promise<SendOutcome>;
}

export interface GenericWebhookSettings {
  url: string;
  authToken?: string;
  secret?: string;
  /** Phone numbers (SMS) or device tokens and topics (push), passed through to the gateway. */
  to: string[];
}

/**
 * Posts `{channel, to, subject, text, kind, payload}` as JSON to the gateway's URL, with the bearer
 * token and the webhook signature when configured: a gateway of the operator's own turns it into
 * SMS or push.
 */
export function genericWebhookProvider(channel: MessagingChannel, settings: GenericWebhookSettings, outbound: OutboundConfig): HttpMessagingProvider {
  return {
    channel,
    send(message, deliveryId) {
      const body = JSON.stringify({ channel, to: settings.to, subject: message.subject, text: message.text, kind: message.kind, payload: message.payload });
      return postDelivery({ url: settings.url, body, signingSecret: settings.secret, bearerToken: settings.authToken, deliveryId, kind: message.kind }, outbound);
    },
  };
}

/**
 * The platform's SMS or push settings (spec 2.13: `provider`, ...) name which implementation a
 * provider without a URL of its own uses; only `webhook` exists.
 */
export function platformMessagingSettings(channel: MessagingChannel, platform: Record<string, string>): Pick<GenericWebhookSettings, "url" | "authToken"> {
  const vendor = platform.provider ?? "webhook";
  if (vendor !== "webhook") throw new SendError(`the platform ${channel} provider "${vendor}" is not supported; set provider to webhook with webhook_url`, true);
  if (!platform.webhook_url) throw new SendError(`no URL: set config.url on the provider or webhook_url in the platform ${channel} settings`, true);
  return { url: platform.webhook_url, authToken: platform.auth_token };
}
