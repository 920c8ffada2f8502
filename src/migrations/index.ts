import type { Migration } from "../platform/migrator.js";
import * as m0001 from "./0001-identity.js";
import * as m0002 from "./0002-audit.js";
import * as m0003 from "./0003-catalog.js";
import * as m0004 from "./0004-decisioning.js";
import * as m0005 from "./0005-outcomes.js";
import * as m0006 from "./0006-trace-records.js";
import * as m0007 from "./0007-impressions-by-rank.js";
import * as m0008 from "./0008-scheduled-runs.js";
import * as m0009 from "./0009-notifications.js";
import * as m0010 from "./0010-alert-rules.js";
import * as m0011 from "./0011-health-alerts.js";
import * as m0012 from "./0012-model-registry.js";
import * as m0013 from "./0013-experiments.js";
import * as m0014 from "./0014-explanations.js";
import * as m0015 from "./0015-customer-events.js";
import * as m0016 from "./0016-customer-profile.js";
import * as m0017 from "./0017-delivery-events.js";
import * as m0018 from "./0018-approvals.js";
import * as m0019 from "./0019-content.js";
import * as m0020 from "./0020-user-accounts.js";
import * as m0024 from "./0024-auth-tokens.js";

/** Numbered migrations, in order. Listed statically so they load the same under tsx and in workers. */
export const migrations: Migration[] = [
  { name: "0001-identity", up: m0001.up },
  { name: "0002-audit", up: m0002.up },
  { name: "0003-catalog", up: m0003.up },
  { name: "0004-decisioning", up: m0004.up },
  { name: "0005-outcomes", up: m0005.up },
  { name: "0006-trace-records", up: m0006.up },
  { name: "0007-impressions-by-rank", up: m0007.up },
  { name: "0008-scheduled-runs", up: m0008.up },
  { name: "0009-notifications", up: m0009.up },
  { name: "0010-alert-rules", up: m0010.up },
  { name: "0011-health-alerts", up: m0011.up },
  { name: "0012-model-registry", up: m0012.up },
  { name: "0013-experiments", up: m0013.up },
  { name: "0014-explanations", up: m0014.up },
  { name: "0015-customer-events", up: m0015.up },
  { name: "0016-customer-profile", up: m0016.up },
  { name: "0017-delivery-events", up: m0017.up },
  { name: "0018-approvals", up: m0018.up },
  { name: "0019-content", up: m0019.up },
  { name: "0020-user-accounts", up: m0020.up },
  { name: "0024-auth-tokens", up: m0024.up },
];
