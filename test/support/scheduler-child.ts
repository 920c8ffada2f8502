import { loadConfig } from "../../src/config.js";
import { createLogger } from "../../src/platform/logger.js";
import { startService } from "../../src/main.js";
import { slotRecorderJob, type SlotRecorderSpec } from "./slot-recorder.js";

/**
 * A service process like `src/main.ts`, configured by the environment, that also registers the
 * recording jobs of TEST_SLOT_JOBS (JSON), so that a test can watch several processes share a schedule.
 */
const config = loadConfig();
const logger = createLogger(config.logLevel);
const specs = JSON.parse(process.env.TEST_SLOT_JOBS ?? "[]") as SlotRecorderSpec[];
const service = await startService(config, logger, { extraJobs: (f) => specs.map((spec) => slotRecorderJob(f.db, spec)) });
process.on("SIGTERM", () => {
  service.stop().then(
    () => process.exit(0),
    () => process.exit(1),
  );
});
