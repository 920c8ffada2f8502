import type { CronRoute, ScheduledJob } from "./scheduled-job.js";
import { validateSchedule } from "./job-schedule.js";

/**
 * The jobs of this deployment, checked once at start-up: a duplicate name or a bad schedule is a
 * programming error in a domain, so it stops the process rather than failing at the first slot.
 */
export class JobRegistry {
  private readonly byName = new Map<string, ScheduledJob>();

  constructor(jobs: readonly ScheduledJob[]) {
    for (const job of jobs) {
      if (!/^[a-z0-9][a-z0-9.-]*$/.test(job.name)) throw new Error(`scheduled job name "${job.name}" must be lower-case letters, digits, dots and dashes`);
      if (this.byName.has(job.name)) throw new Error(`scheduled job "${job.name}" is registered twice`);
      validateSchedule(job.schedule, `job ${job.name}`);
      this.byName.set(job.name, job);
    }
  }

  get(name: string): ScheduledJob | undefined {
    return this.byName.get(name);
  }

  all(): ScheduledJob[] {
    return [...this.byName.values()];
  }

  onRoute(route: CronRoute): ScheduledJob[] {
    return this.all().filter((job) => job.route === route);
  }
}
