import type { Migration } from "../platform/migrator.js";
import * as m0001 from "./0001-identity.js";
import * as m0002 from "./0002-audit.js";
import * as m0003 from "./0003-catalog.js";
import * as m0004 from "./0004-decisioning.js";
import * as m0005 from "./0005-outcomes.js";
import * as m0006 from "./0006-trace-records.js";
import * as m0007 from "./0007-impressions-by-rank.js";
import * as m0010 from "./0010-alert-rules.js";

/** Numbered migrations, in order. Listed statically so they load the same under tsx and in workers. */
export const migrations: Migration[] = [
  { name: "0001-identity", up: m0001.up },
  { name: "0002-audit", up: m0002.up },
  { name: "0003-catalog", up: m0003.up },
  { name: "0004-decisioning", up: m0004.up },
  { name: "0005-outcomes", up: m0005.up },
  { name: "0006-trace-records", up: m0006.up },
  { name: "0007-impressions-by-rank", up: m0007.up },
  { name: "0010-alert-rules", up: m0010.up },
];
