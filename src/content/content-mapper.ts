import { create, toJson, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  ContentDetailSchema,
  ContentItemSchema,
  ContentReferenceSchema,
  ContentVersionSchema,
  type ContentDetail,
  type ContentItem,
  type ContentReference,
  type ContentVersion,
} from "../../gen/decisioning/v1/content_pb.js";
import type { ContentRow, VersionRow } from "./content-store.js";

const some = <T>(v: T | null): T | undefined => (v === null ? undefined : v);

/** The item's public fields, which both ContentItem and the top level of ContentDetail carry. */
function itemFields(row: ContentRow) {
  return {
    id: row.id,
    title: row.title,
    body: row.body,
    contentType: row.content_type,
    status: row.status,
    version: row.version,
    parentTemplateId: some(row.parent_template_id),
    sourceId: some(row.source_id),
    publishedVersion: some(row.published_version),
    publishedAt: row.published_at ? timestampFromDate(row.published_at) : undefined,
    submittedBy: some(row.submitted_by),
    approvedBy: some(row.approved_by),
    approvedVersion: some(row.approved_version),
    rejectionReason: some(row.rejection_reason),
    createdBy: some(row.created_by),
    createdAt: timestampFromDate(row.created_at),
    updatedAt: timestampFromDate(row.updated_at),
  } satisfies MessageInitShape<typeof ContentItemSchema>;
}

export function toContentItem(row: ContentRow): ContentItem {
  return create(ContentItemSchema, itemFields(row));
}

/** The read of one item: its fields at the top level (spec 4.8) and again under `item` for earlier clients. */
export function toContentDetail(row: ContentRow, links: { parent: ContentRow | null; source: ContentRow | null; versions: VersionRow[] }): ContentDetail {
  return create(ContentDetailSchema, {
    ...itemFields(row),
    item: toContentItem(row),
    parentTemplate: links.parent ? toContentReference(links.parent) : undefined,
    source: links.source ? toContentReference(links.source) : undefined,
    versions: links.versions.map(toContentVersion),
  });
}

export function toContentReference(row: ContentRow): ContentReference {
  return create(ContentReferenceSchema, { id: row.id, title: row.title, status: row.status, version: row.version });
}

export function toContentVersion(row: VersionRow): ContentVersion {
  return create(ContentVersionSchema, {
    version: row.version,
    title: row.title,
    body: row.body,
    contentType: row.content_type,
    change: row.change,
    revertedFrom: some(row.reverted_from),
    publishedAt: row.published_at ? timestampFromDate(row.published_at) : undefined,
    createdBy: some(row.created_by),
    createdAt: timestampFromDate(row.created_at),
  });
}

/** The audit snapshot of an item: its public shape. */
export function contentSnapshot(row: ContentRow): Record<string, unknown> {
  return toJson(ContentItemSchema, toContentItem(row), { alwaysEmitImplicit: true }) as Record<string, unknown>;
}
