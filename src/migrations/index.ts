import type { Migration } from "../platform/migrator.js";
import * as m0001 from "./0001-identity.js";

/** Numbered migrations, in order. Listed statically so they load the same under tsx and in workers. */
export const migrations: Migration[] = [{ name: "0001-identity", up: m0001.up }];
