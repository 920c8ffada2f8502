import type { Sequelize } from "sequelize";
import type { CronRoute, JobSchedule, RouteCall, ScheduledJob } from "../../src/scheduling/scheduled-job.js";

/** What a test asks of a recording job; JSON, so that a child process can be told it too. */
export interface SlotRecorderSpec {
  name: string;
  schedule: JobSchedule;
  route?: CronRoute;
  routeCall?: RouteCall;
  /** Attempts of each slot that throw before one succeeds (counted in the table, across processes). */
  failFirst?: number;
  /** How long each attempt takes. */
  runMs?: number;
}

export interface SlotRow {
  job: string;
  slot: Date;
  pid: number;
  ok: boolean;
  ran_at: Date;
}

/** Plain rows, no unique index: a slot run twice would show twice. */
export async function createSlotTable(db: Sequelize): Promise<void> {
  await db.query(`CREATE TABLE IF NOT EXISTS test_slot_runs (
    job text NOT NULL, slot timestamptz NOT NULL, pid integer NOT NULL, ok boolean NOT NULL, ran_at timestamptz NOT NULL DEFAULT clock_timestamp())`);
}

export async function slotRows(db: Sequelize, job: string): Promise<SlotRow[]> {
  const [rows] = await db.query(`SELECT * FROM test_slot_runs WHERE job = $1 ORDER BY slot, ran_at`, { bind: [job] });
  return rows as SlotRow[];
}

/** A real job on the real database: each attempt inserts a row, then fails while `failFirst` says so. */
export function slotRecorderJob(db: Sequelize, spec: SlotRecorderSpec): ScheduledJob {
  return {
    name: spec.name,
    schedule: spec.schedule,
    route: spec.route,
    routeCall: spec.routeCall,
    async run(slot) {
      if (spec.runMs) await new Promise((res) => setTimeout(res, spec.runMs));
      const [[{ n }]] = (await db.query(`SELECT count(*)::int AS n FROM test_slot_runs WHERE job = $1 AND slot = $2`, { bind: [spec.name, slot] })) as [
        Array<{ n: number }>,
        unknown,
      ];
      const ok = n >= (spec.failFirst ?? 0);
      await db.query(`INSERT INTO test_slot_runs (job, slot, pid, ok) VALUES ($1, $2, $3, $4)`, { bind: [spec.name, slot, process.pid, ok] });
      if (!ok) throw new Error(`planned failure ${n + 1} of slot ${slot.toISOString()}`);
    },
  };
}
