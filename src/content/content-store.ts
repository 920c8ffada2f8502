import type { Sequelize } from "sequelize";
import { containsPattern, execReturning, selectRows, type Transaction } from "../platform/db.js";
import type { CursorPageRequest } from "../platform/pagination.js";
import { tenantWriteTransaction } from "../platform/tenant-write-lock.js";
import type { ContentStatus } from "../core/index.js";
import type { PublishedContent } from "./published-content.js";

export interface ContentRow {
  id: string;
  title: string;
  body: string;
  content_type: string;
  status: ContentStatus;
  version: number;
  parent_template_id: string | null;
  source_id: string | null;
  submitted_by: string | null;
  approved_by: string | null;
  approved_version: number | null;
  published_version: number | null;
  published_at: Date | null;
  rejection_reason: string | null;
  created_by: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface VersionRow {
  version: number;
  title: string;
  body: string;
  content_type: string;
  change: "create" | "update" | "revert" | "publish";
  reverted_from: number | null;
  published_at: Date | null;
  created_by: string | null;
  created_at: Date;
}

/** Columns a write may set on an item; `version` and `updated_at` are the store's. */
export type ContentChange = Partial<Omit<ContentRow, "id" | "version" | "created_at" | "updated_at">>;

const ITEM_COLUMNS = `id, title, body, content_type, status, version, parent_template_id, source_id, submitted_by, approved_by,
  approved_version, published_version, published_at, rejection_reason, created_by, created_at, updated_at`;
const VERSION_COLUMNS = "version, title, body, content_type, change, reverted_from, published_at, created_by, created_at";

/** Content items and their version snapshots. Tenant first, always. */
export class ContentStore {
  constructor(private readonly db: Sequelize) {}

  /** The one lock order (tenant-write-lock.ts): the tenant's write lock, then row locks. */
  transaction<T>(tenantId: string, fn: (t: Transaction) => Promise<T>): Promise<T> {
    return tenantWriteTransaction(this.db, tenantId, fn);
  }

  async item(tenantId: string, id: string, t?: Transaction): Promise<ContentRow | null> {
    const [row] = await selectRows<ContentRow>(
      this.db,
      `SELECT ${ITEM_COLUMNS} FROM content_items WHERE tenant_id = $1 AND id = $2${t ? " FOR UPDATE" : ""}`,
      [tenantId, id],
      t,
    );
    return row ?? null;
  }

  /** Newest first; `text` matches title or body in any case (ILIKE with its wildcards escaped). */
  page(tenantId: string, page: CursorPageRequest, filter: { status: ContentStatus | null; text: string | null }): Promise<ContentRow[]> {
    const pattern = filter.text === null ? null : containsPattern(filter.text);
    return selectRows<ContentRow>(
      this.db,
      `SELECT ${ITEM_COLUMNS} FROM content_items
       WHERE tenant_id = $1 AND ($2::uuid IS NULL OR id < $2) AND ($3::text IS NULL OR status = $3)
         AND ($4::text IS NULL OR title ILIKE $4 OR body ILIKE $4)
       ORDER BY id DESC LIMIT $5`,
      [tenantId, page.cursor, filter.status, pattern, page.limit + 1],
    );
  }

  async insert(t: Transaction, tenantId: string, row: Pick<ContentRow, "id" | "title" | "body" | "content_type" | "parent_template_id" | "source_id" | "created_by">): Promise<ContentRow> {
    const [inserted] = await execReturning<ContentRow>(
      this.db,
      `INSERT INTO content_items (tenant_id, id, title, body, content_type, parent_template_id, source_id, created_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${ITEM_COLUMNS}`,
      [tenantId, row.id, row.title, row.body, row.content_type, row.parent_template_id, row.source_id, row.created_by],
      t,
    );
    return inserted;
  }

  /** Sets `change`; with `bumpVersion`, the item moves to its next version (whose snapshot the caller writes). */
  async update(t: Transaction, tenantId: string, id: string, change: ContentChange, bumpVersion: boolean): Promise<ContentRow> {
    const entries = Object.entries(change).filter(([, v]) => v !== undefined);
    const sets = entries.map(([column], i) => `${column} = $${i + 3}`);
    if (bumpVersion) sets.push("version = version + 1");
    const [row] = await execReturning<ContentRow>(
      this.db,
      `UPDATE content_items SET ${[...sets, "updated_at = now()"].join(", ")} WHERE tenant_id = $1 AND id = $2 RETURNING ${ITEM_COLUMNS}`,
      [tenantId, id, ...entries.map(([, v]) => v)],
      t,
    );
    return row;
  }

  /**
   * The snapshot of the item's current version, written by `actor`. `revertedFrom`: the version a
   * revert or publish copied; `publishedAt`: set when this snapshot is the one a publish made live.
   */
  async snapshot(
    t: Transaction,
    tenantId: string,
    item: ContentRow,
    change: VersionRow["change"],
    actor: string | null,
    opts: { revertedFrom?: number; publishedAt?: Date } = {},
  ): Promise<void> {
    await this.db.query(
      `INSERT INTO content_versions (tenant_id, content_id, version, title, body, content_type, change, reverted_from, published_at, created_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      {
        bind: [tenantId, item.id, item.version, item.title, item.body, item.content_type, change, opts.revertedFrom ?? null, opts.publishedAt ?? null, actor],
        transaction: t,
      },
    );
  }

  async version(tenantId: string, id: string, version: number, t?: Transaction): Promise<VersionRow | null> {
    const [row] = await selectRows<VersionRow>(
      this.db,
      `SELECT ${VERSION_COLUMNS} FROM content_versions WHERE tenant_id = $1 AND content_id = $2 AND version = $3`,
      [tenantId, id, version],
      t,
    );
    return row ?? null;
  }

  /** The newest `limit` snapshots. */
  versions(tenantId: string, id: string, limit: number): Promise<VersionRow[]> {
    return selectRows<VersionRow>(
      this.db,
      `SELECT ${VERSION_COLUMNS} FROM content_versions WHERE tenant_id = $1 AND content_id = $2 ORDER BY version DESC LIMIT $3`,
      [tenantId, id, limit],
    );
  }

  /** Items among `ids` that a creative may name: the tenant's, not archived. */
  async referable(tenantId: string, ids: readonly string[]): Promise<Set<string>> {
    const rows = await selectRows<{ id: string }>(
      this.db,
      "SELECT id FROM content_items WHERE tenant_id = $1 AND id = ANY($2::uuid[]) AND status <> 'archived'",
      [tenantId, ids],
    );
    return new Set(rows.map((r) => r.id));
  }

  /** The live version of those of `ids` that have one (published at least once, not archived). */
  async published(tenantId: string, ids: readonly string[]): Promise<PublishedContent[]> {
    const rows = await selectRows<{ id: string; version: number; title: string; body: string; content_type: string }>(
      this.db,
      `SELECT i.id, v.version, v.title, v.body, v.content_type
       FROM content_items i
       JOIN content_versions v ON v.tenant_id = i.tenant_id AND v.content_id = i.id AND v.version = i.published_version
       WHERE i.tenant_id = $1 AND i.id = ANY($2::uuid[]) AND i.status <> 'archived'`,
      [tenantId, ids],
    );
    return rows.map((r) => ({ contentId: r.id, version: r.version, title: r.title, body: r.body, contentType: r.content_type }));
  }
}
