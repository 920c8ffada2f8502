export interface GroupCommitOptions {
  /** Statements in flight at once; what arrives meanwhile waits and goes as one batch. */
  maxInFlight?: number;
  /** Writes per statement. */
  maxBatch?: number;
  /** Called when the last write in flight is done and none waits: its owner may drop it. */
  onIdle?: () => void;
}

interface Waiting<W, R> {
  write: W;
  resolve(result: R): void;
  reject(err: unknown): void;
}

/**
 * Group commit of writes that must be committed before their request is answered. While
 * `maxInFlight` statements run, writes that arrive wait and then go together in one statement:
 * one round trip, one commit and one WAL flush for the batch instead of one each. An idle service
 * writes each at once, so grouping adds no wait when there is nothing to group.
 *
 * A batch is all or nothing; when it fails, its writes are made one by one, so a write that cannot
 * be stored (its tenant deleted meanwhile) fails only its own request. Writes that must not be
 * retried (a batch whose answer was lost may have taken effect, as a Redis script may) give no
 * `writeOne`: every write then goes in a batch, and a failed batch fails each of its writes.
 */
export class GroupCommit<W, R> {
  private waiting: Array<Waiting<W, R>> = [];
  private inFlight = 0;
  private readonly maxInFlight: number;
  private readonly maxBatch: number;
  private readonly onIdle: (() => void) | undefined;

  constructor(
    /** Writes a batch in one statement; results in the batch's order. */
    private readonly writeBatch: (batch: W[]) => Promise<R[]>,
    private readonly writeOne: ((write: W) => Promise<R>) | null,
    options: GroupCommitOptions = {},
  ) {
    this.maxInFlight = options.maxInFlight ?? 2;
    this.maxBatch = options.maxBatch ?? 64;
    this.onIdle = options.onIdle;
  }

  /** Resolves with the write's result once it is committed. */
  submit(write: W): Promise<R> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ write, resolve, reject });
      this.next();
    });
  }

  private next(): void {
    while (this.inFlight < this.maxInFlight && this.waiting.length) {
      const batch = this.waiting.splice(0, this.maxBatch);
      this.inFlight++;
      void this.commit(batch).finally(() => {
        this.inFlight--;
        this.next();
        if (this.inFlight === 0) this.onIdle?.();
      });
    }
  }

  private async commit(batch: Array<Waiting<W, R>>): Promise<void> {
    const writeOne = this.writeOne;
    if (batch.length > 1 || !writeOne) {
      try {
        const results = await this.writeBatch(batch.map((w) => w.write));
        batch.forEach((w, i) => w.resolve(results[i]));
        return;
      } catch (err) {
        if (!writeOne) return batch.forEach((w) => w.reject(err));
        // One by one below: each write gets its own outcome.
      }
    }
    await Promise.all(batch.map((w) => writeOne(w.write).then(w.resolve, w.reject)));
  }
}

/**
 * One GroupCommit per key (a tenant: a batch must be one tenant's, for a Redis Cluster slot or a
 * statement scoped to one tenant), kept while the key has work on its way: a long-running process
 * serves tenants that come and go.
 */
export class KeyedGroupCommit<W, R> {
  private readonly groups = new Map<string, GroupCommit<W, R>>();

  constructor(
    private readonly writeBatch: (key: string, batch: W[]) => Promise<R[]>,
    private readonly options: Omit<GroupCommitOptions, "onIdle"> = {},
  ) {}

  submit(key: string, write: W): Promise<R> {
    let group = this.groups.get(key);
    if (!group) {
      const onIdle = () => this.groups.delete(key);
      group = new GroupCommit((batch: W[]) => this.writeBatch(key, batch), null, Object.assign({}, this.options, { onIdle }));
      this.groups.set(key, group);
    }
    return group.submit(write);
  }
}
