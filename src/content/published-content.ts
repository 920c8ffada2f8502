/**
 * What the content domain gives the decisions' snapshot: the live version of each content item a
 * creative names. Compiled into the snapshot once per change (never read per decision), and
 * refreshed through the snapshot invalidation when an item is published or archived.
 */
export interface PublishedContent {
  contentId: string;
  version: number;
  title: string;
  body: string;
  contentType: string;
}

/** The read model: the published versions of those of `ids` that are published and not archived. */
export type PublishedContentReader = (tenantId: string, ids: readonly string[]) => Promise<PublishedContent[]>;
