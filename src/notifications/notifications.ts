import type { Sequelize } from "sequelize";
import { NotificationProviderService } from "../../gen/decisioning/v1/notifications_pb.js";
import { PlatformSettingsService as PlatformSettingsServiceDesc } from "../../gen/decisioning/v1/platform_settings_pb.js";
import type { AuditLog } from "../audit/audit-log.js";
import type { OutboundConfig } from "../config.js";
import type { Bus } from "../platform/bus.js";
import type { Transaction } from "../platform/db.js";
import type { Logger } from "../platform/logger.js";
import type { ScheduledJob } from "../scheduling/scheduled-job.js";
import type { ServiceRegistration } from "../platform/service-registration.js";
import type { SettingsCipher } from "../platform/settings-cipher.js";
import { PlatformSettingsService, type PlatformOwnerCheck } from "../platform-settings/platform-settings-service.js";
import { PlatformSettingsStore } from "../platform-settings/platform-settings-store.js";
import { rotateSettingsKey, type RotationResult, type SealedSecretHolder } from "../platform-settings/settings-key-rotation.js";
import { DeliveryStore } from "./delivery-store.js";
import { OutboundDispatcher } from "./dispatcher.js";
import { redeliveryJob } from "./redelivery-job.js";
import { ProviderService, type ProviderUsers } from "./provider-service.js";
import { ProviderStore } from "./provider-store.js";

export interface NotificationsOptions {
  db: Sequelize;
  bus: Bus;
  audit: AuditLog;
  cipher: SettingsCipher;
  outbound: OutboundConfig;
  isPlatformOwner: PlatformOwnerCheck;
  logger: Logger;
  /** Other domains' sealed secrets that key rotation re-seals too (SSO client secrets). */
  sealedSecrets?: SealedSecretHolder[];
  /** What in other domains sends through a provider (alert rules, report templates): a provider in use is not deleted. */
  providerUsers?: ProviderUsers[];
}

export interface Notifications {
  dispatcher: OutboundDispatcher;
  platformSettings: PlatformSettingsService;
  providers: ProviderService;
  deliveries: DeliveryStore;
  /** The outbox's sweep, for the scheduler. */
  jobs: ScheduledJob[];
  /** Messages in the outbox that carry a customer's data, for a GDPR erasure (a CustomerDataHolder). */
  customerMessages: {
    kind: string;
    erase(tenantId: string, customerId: string, t?: Transaction): Promise<number>;
    count(tenantId: string, customerId: string): Promise<number>;
  };
  /**
   * Which of `ids` name notification providers of the tenant: what another domain checks a
   * reference in its body against (spec 7: a foreign or unknown provider is a 400 there).
   */
  existingProviderIds(tenantId: string, ids: readonly string[]): Promise<ReadonlySet<string>>;
  services: ServiceRegistration[];
  /** Subscribes the platform-settings cache to changes made by other processes; call before serving. */
  listen(): Promise<void>;
  /** `cli settings rotate-key`. */
  rotateKey(): Promise<RotationResult>;
}

/** Platform settings, notification providers and the outbound dispatcher, built together. */
export function createNotifications(o: NotificationsOptions): Notifications {
  const providerStore = new ProviderStore(o.db);
  const settingsStore = new PlatformSettingsStore(o.db);
  const deliveries = new DeliveryStore(o.db);
  const platformSettings = new PlatformSettingsService(o.db, settingsStore, o.cipher, o.audit, o.bus, o.isPlatformOwner);
  const providers = new ProviderService(o.db, providerStore, o.audit, o.cipher, o.outbound.allowPrivate, o.providerUsers ?? []);
  const dispatcher = new OutboundDispatcher({
    deliveries,
    providers: providerStore,
    cipher: o.cipher,
    platformSettings: (category) => platformSettings.settings(category),
    outbound: o.outbound,
    logger: o.logger,
  });
  return {
    dispatcher,
    platformSettings,
    providers,
    deliveries,
    jobs: [redeliveryJob(dispatcher, deliveries, o.logger)],
    customerMessages: {
      kind: "outboundMessages",
      erase: (tenantId, customerId, t) => deliveries.eraseCustomer(tenantId, customerId, t),
      count: (tenantId, customerId) => deliveries.countCustomer(tenantId, customerId),
    },
    existingProviderIds: (tenantId, ids) => providerStore.existingIds(tenantId, ids),
    services: [
      { service: PlatformSettingsServiceDesc, impl: platformSettings as never },
      { service: NotificationProviderService, impl: providers as never },
    ],
    listen: () => platformSettings.listen(),
    rotateKey: () => rotateSettingsKey(o.db, o.cipher, settingsStore, providerStore, o.sealedSecrets),
  };
}
