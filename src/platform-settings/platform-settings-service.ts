import { create, fromJson, type JsonObject } from "@bufbuild/protobuf";
import { StructSchema, type Struct } from "@bufbuild/protobuf/wkt";
import type { Sequelize } from "sequelize";
import {
  PutPlatformSettingsResponseSchema,
  type GetPlatformSettingsRequest,
  type PlatformSetting,
  type PutPlatformSettingsRequest,
  type PutPlatformSettingsResponse,
} from "../../gen/decisioning/v1/platform_settings_pb.js";
import type { AuditLog } from "../audit/audit-log.js";
import type { Bus } from "../platform/bus.js";
import type { TenantContext } from "../platform/context.js";
import { forbidden, invalidField, invalidFields, type FieldViolation } from "../platform/errors.js";
import { InvalidatedCache } from "../platform/invalidated-cache.js";
import { settingsKeyMissing, type SettingsCipher } from "../platform/settings-cipher.js";
import { tenantWriteTransaction } from "../platform/tenant-write-lock.js";
import { SETTING_CATEGORIES, type PlatformSettingsStore, type SettingCategory, type SettingRow, type SettingWrite } from "./platform-settings-store.js";
import { settingContext, settingPlaintext } from "./setting-values.js";

/** What an encrypted value reads as (spec 2.13); sent back on PUT it keeps the stored value. */
export const SETTING_MASK = "****";
/** Every process drops its copy of a category when it changes; the message is the category. */
export const PLATFORM_SETTINGS_CHANNEL = "decisioning.platform-settings.changed";

/** A setting of a request that `checked` passed: its `value` is present. */
type CheckedSetting = PlatformSetting & { value: string };

const KEY = /^[a-z][a-z0-9_]{0,63}$/;
const MAX_VALUE = 4096;
const MAX_DESCRIPTION = 500;

/** Whether a tenant is the platform owner: PLATFORM_OWNER_TENANT_ID, else the tenant made with --platform-owner. */
export type PlatformOwnerCheck = (tenantId: string) => Promise<boolean>;

function isCategory(value: string): value is SettingCategory {
  return (SETTING_CATEGORIES as readonly string[]).includes(value);
}

function categoryViolation(): string {
  return `must be one of ${SETTING_CATEGORIES.join(", ")}`;
}

function shown(row: SettingRow): string {
  return row.encrypted ? SETTING_MASK : row.value;
}

/**
 * Spec 4.9: the platform's e-mail, SMS and push settings, for admins of the platform-owner tenant
 * only (the admin role is the method policy's; ownership is checked here). A PUT answers once
 * every process has dropped its copy of the category, so the next send anywhere uses the new values.
 */
export class PlatformSettingsService {
  /** Decrypted values per category, as senders read them; reloaded when any process changes them. */
  private readonly values: InvalidatedCache<Record<string, string>>;

  constructor(
    private readonly db: Sequelize,
    private readonly store: PlatformSettingsStore,
    private readonly cipher: SettingsCipher,
    private readonly audit: AuditLog,
    private readonly bus: Bus,
    private readonly isPlatformOwner: PlatformOwnerCheck,
  ) {
    this.values = new InvalidatedCache(bus, PLATFORM_SETTINGS_CHANNEL, async (category) => {
      const rows = await this.store.list(category as SettingCategory);
      return Object.fromEntries(rows.map((r) => [r.key, settingPlaintext(this.cipher, r)]));
    });
  }

  listen(): Promise<void> {
    return this.values.listen();
  }

  /** The plaintext settings of a category, for the e-mail, SMS and push senders. */
  settings(category: SettingCategory): Promise<Record<string, string>> {
    return this.values.get(category);
  }

  async getPlatformSettings(ctx: TenantContext, req: GetPlatformSettingsRequest): Promise<Struct> {
    await this.requireOwner(ctx);
    if (req.category !== undefined && !isCategory(req.category)) throw invalidField("category", categoryViolation());
    const rows = await this.store.list(req.category as SettingCategory | undefined);
    if (req.category !== undefined) return fromJson(StructSchema, Object.fromEntries(rows.map((r) => [r.key, shown(r)])));
    const grouped: JsonObject = {};
    for (const c of SETTING_CATEGORIES) {
      grouped[c] = rows.filter((r) => r.category === c).map((r) => ({ key: r.key, value: shown(r), encrypted: r.encrypted, description: r.description }));
    }
    return fromJson(StructSchema, grouped);
  }

  async putPlatformSettings(ctx: TenantContext, req: PutPlatformSettingsRequest): Promise<PutPlatformSettingsResponse> {
    await this.requireOwner(ctx);
    const { category, settings } = this.checked(req);
    await tenantWriteTransaction(this.db, ctx.tenantId, async (t) => {
      const stored = new Map((await this.store.list(category, t, true)).map((r) => [r.key, r]));
      const violations: FieldViolation[] = [];
      const writes = settings.map((s, i): SettingWrite => {
        const base = { category, key: s.key, description: s.description };
        const before = stored.get(s.key);
        if (s.value === SETTING_MASK && s.encrypted) {
          if (before?.encrypted) return { ...base, value: before.value, encrypted: true, key_id: before.key_id };
          violations.push({ field: `settings[${i}].value`, message: "is `****`, but no encrypted value is stored to keep: send the value itself" });
        }
        if (!s.encrypted) return { ...base, value: s.value, encrypted: false, key_id: null };
        if (!this.cipher.configured) throw settingsKeyMissing();
        const sealed = this.cipher.seal(s.value, settingContext(category, s.key));
        return { ...base, value: sealed.ciphertext, encrypted: true, key_id: sealed.keyId };
      });
      if (violations.length) throw invalidFields(violations);
      await this.store.upsert(t, writes);
      const flat = (rows: Iterable<SettingRow | SettingWrite>) => Object.fromEntries([...rows].map((r) => [r.key, r.encrypted ? SETTING_MASK : r.value]));
      await this.audit.record(t, ctx, {
        action: stored.size ? "update" : "create",
        entityType: "platform_settings",
        entityId: category,
        entityName: category,
        before: stored.size ? flat(stored.values()) : null,
        after: flat([...stored.values(), ...writes].reduce((m, r) => m.set(r.key, r), new Map<string, SettingRow | SettingWrite>()).values()),
        entityVersion: null,
        changes: { keys: writes.map((w) => w.key) },
      });
    });
    await this.bus.publish(PLATFORM_SETTINGS_CHANNEL, category, { confirmed: true });
    return create(PutPlatformSettingsResponseSchema, { ok: true });
  }

  private async requireOwner(ctx: TenantContext): Promise<void> {
    if (!(await this.isPlatformOwner(ctx.tenantId))) {
      throw forbidden("Platform settings are restricted to admins of the platform owner tenant", "NOT_PLATFORM_OWNER");
    }
  }

  /** Every field problem at once, before anything is read or written. */
  private checked(req: PutPlatformSettingsRequest): { category: SettingCategory; settings: CheckedSetting[] } {
    const violations: FieldViolation[] = [];
    if (!isCategory(req.category)) violations.push({ field: "category", message: req.category ? categoryViolation() : `is required (${categoryViolation()})` });
    if (req.settings.length === 0) violations.push({ field: "settings", message: "must list at least one setting" });
    const seen = new Set<string>();
    req.settings.forEach((s, i) => {
      if (!KEY.test(s.key)) violations.push({ field: `settings[${i}].key`, message: "must be lower-case letters, digits and _ (at most 64), starting with a letter" });
      else if (seen.has(s.key)) violations.push({ field: `settings[${i}].key`, message: `repeats ${s.key}` });
      seen.add(s.key);
      if (s.value === undefined) violations.push({ field: `settings[${i}].value`, message: 'is required (send "" to clear it)' });
      else if (s.value.length > MAX_VALUE) violations.push({ field: `settings[${i}].value`, message: `must be at most ${MAX_VALUE} characters` });
      if (s.description.length > MAX_DESCRIPTION) violations.push({ field: `settings[${i}].description`, message: `must be at most ${MAX_DESCRIPTION} characters` });
    });
    if (violations.length) throw invalidFields(violations);
    return { category: req.category as SettingCategory, settings: req.settings as CheckedSetting[] };
  }
}
