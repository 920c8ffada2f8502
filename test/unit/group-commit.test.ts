import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { GroupCommit, KeyedGroupCommit } from "../../src/platform/group-commit.js";

/** A batch writer whose statements finish when the test says, recording each batch. */
function heldWriter(fail: (batch: number[]) => boolean = () => false) {
  const batches: number[][] = [];
  const finish: Array<() => void> = [];
  const writeBatch = (batch: number[]) => {
    batches.push(batch);
    return new Promise<string[]>((resolve, reject) =>
      finish.push(() => (fail(batch) ? reject(new Error(`batch ${batch} failed`)) : resolve(batch.map((n) => `#${n}`)))),
    );
  };
  return { batches, finish, writeBatch };
}

const settle = <T>(p: Promise<T>) => p.then((value) => ({ value }), (err: Error) => ({ error: err.message }));
const turn = () => new Promise((r) => setImmediate(r));

describe("group commit", () => {
  test("writes that arrive while statements run go together, each with its own result, in order", async () => {
    const w = heldWriter();
    const commits = new GroupCommit<number, string>(w.writeBatch, null, { maxInFlight: 1 });
    const first = commits.submit(1);
    const rest = [2, 3, 4].map((n) => commits.submit(n));
    assert.deepEqual(w.batches, [[1]], "the first goes at once, the others wait for it");
    w.finish.shift()!();
    assert.equal(await first, "#1");
    await turn();
    assert.deepEqual(w.batches, [[1], [2, 3, 4]]);
    w.finish.shift()!();
    assert.deepEqual(await Promise.all(rest), ["#2", "#3", "#4"]);
  });

  test("without writeOne a failed batch fails each of its writes and is not retried", async () => {
    const w = heldWriter((batch) => batch.includes(3));
    const commits = new GroupCommit<number, string>(w.writeBatch, null, { maxInFlight: 1 });
    const all = [1, 2, 3].map((n) => settle(commits.submit(n)));
    w.finish.shift()!();
    await turn();
    w.finish.shift()!();
    assert.deepEqual(await Promise.all(all), [{ value: "#1" }, { error: "batch 2,3 failed" }, { error: "batch 2,3 failed" }]);
    assert.deepEqual(w.batches, [[1], [2, 3]]);
  });

  test("with writeOne a failed batch is written one by one, so only the bad write fails", async () => {
    const w = heldWriter((batch) => batch.includes(3));
    const one = (n: number) => (n === 3 ? Promise.reject(new Error("3 cannot be stored")) : Promise.resolve(`one #${n}`));
    const commits = new GroupCommit<number, string>(w.writeBatch, one, { maxInFlight: 1 });
    // A write alone goes by writeOne; the two that waited for it go as a batch, which fails.
    const all = [1, 2, 3].map((n) => settle(commits.submit(n)));
    await turn();
    assert.deepEqual(w.batches, [[2, 3]]);
    w.finish.shift()!();
    assert.deepEqual(await Promise.all(all), [{ value: "one #1" }, { value: "one #2" }, { error: "3 cannot be stored" }]);
  });

  test("says when it is idle: the last write done and none waiting", async () => {
    const w = heldWriter();
    let idle = 0;
    const commits = new GroupCommit<number, string>(w.writeBatch, null, { maxInFlight: 1, onIdle: () => idle++ });
    const writes = [commits.submit(1), commits.submit(2)];
    w.finish.shift()!();
    await turn();
    assert.equal(idle, 0, "the second write is in flight");
    w.finish.shift()!();
    await Promise.all(writes);
    await turn();
    assert.equal(idle, 1);
  });
});

describe("keyed group commit", () => {
  test("each key's writes batch among themselves, never with another key's, and a key that went idle starts afresh", async () => {
    const batches: Array<[string, number[]]> = [];
    const finish: Array<() => void> = [];
    const commits = new KeyedGroupCommit<number, string>(
      (key, batch) => {
        batches.push([key, batch]);
        return new Promise((resolve) => finish.push(() => resolve(batch.map((n) => `${key}${n}`))));
      },
      { maxInFlight: 1 },
    );
    const first = [commits.submit("a", 1), commits.submit("b", 1)];
    const waiting = [commits.submit("a", 2), commits.submit("b", 2), commits.submit("a", 3)];
    assert.deepEqual(batches, [["a", [1]], ["b", [1]]]);
    finish.splice(0).forEach((f) => f());
    assert.deepEqual(await Promise.all(first), ["a1", "b1"]);
    await turn();
    assert.deepEqual(batches.slice(2), [["a", [2, 3]], ["b", [2]]]);
    finish.splice(0).forEach((f) => f());
    assert.deepEqual(await Promise.all(waiting), ["a2", "b2", "a3"]);
    await turn();
    const again = commits.submit("a", 4);
    assert.deepEqual(batches.at(-1), ["a", [4]], "an idle key's write goes at once");
    finish.splice(0).forEach((f) => f());
    assert.equal(await again, "a4");
  });
});

