import { v7 } from "uuid";

/** Time-ordered UUIDs (v7): `ORDER BY id DESC` is newest first, which keyset pages rely on. */
export function newId(): string {
  return v7();
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Ids arrive from paths and bodies; a malformed one can name no row, so callers answer 404/400 without a query. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}
