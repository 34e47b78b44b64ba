/**
 * The store's writer against a scripted stand-in for its connection (no PostgreSQL): which
 * writes share a transaction, in which order their statements go, what a failing write, a
 * deadlock victim, a lost connection, a timeout and `close` do to the group and to each
 * write's promise.
 */
import { describe, expect, it } from "vitest";
import { PostgresStoreError } from "../src/store-error.js";
import { Rollback, WriteQueue, type RunStatements } from "../src/write-queue.js";
import { deferred, FakeClient, pgError, type Answer } from "./support/fake-client.js";
import { outputAppend, statement } from "./support/writes.js";

const CHANNEL = "golem_changes";

function queueOn(...clients: FakeClient[]): { queue: WriteQueue; connects: () => number } {
  let connects = 0;
  const queue = new WriteQueue(async () => {
    const client = clients[Math.min(connects, clients.length - 1)]!;
    connects++;
    return client.asClient();
  }, CHANNEL);
  return { queue, connects: () => connects };
}

/** The statements of the log that are not the writer's own control statements. */
const writes = (client: FakeClient): string[] => client.log.filter((text) => text.startsWith("write "));

/** Settles-or-not of each promise, observed without awaiting it. */
function track<T>(promises: Promise<T>[]): { settled: boolean[] } {
  const state = { settled: promises.map(() => false) };
  promises.forEach((promise, i) => {
    const settle = (): void => {
      state.settled[i] = true;
    };
    void promise.then(settle, settle);
  });
  return state;
}

/** Holds the answer to the first query matching `match` until `release` is called. */
function holdFirst(match: (text: string) => boolean): { answer: Answer; release: () => void } {
  const gate = deferred();
  let held = false;
  return {
    answer: async (text) => {
      if (!held && match(text)) {
        held = true;
        await gate.promise;
      }
      return undefined;
    },
    release: () => gate.resolve(),
  };
}

const isCommit = (text: string): boolean => text.endsWith("COMMIT");

describe("grouping", () => {
  it("writes issued in one turn share one transaction, each in its own savepoint, in the order issued", async () => {
    const client = new FakeClient();
    const { queue } = queueOn(client);
    const values = await Promise.all([
      queue.write(statement("write a", 1)),
      queue.write(statement("write b", 2)),
      queue.write(statement("write c", 3)),
    ]);
    expect(values).toEqual([1, 2, 3]);
    expect(client.log).toEqual([
      "BEGIN; SAVEPOINT write",
      "write a",
      "RELEASE SAVEPOINT write; SAVEPOINT write",
      "write b",
      "RELEASE SAVEPOINT write; SAVEPOINT write",
      "write c",
      "RELEASE SAVEPOINT write; COMMIT",
    ]);
  });

  it("no write settles before its group's COMMIT has answered", async () => {
    const client = new FakeClient();
    const hold = holdFirst(isCommit);
    client.answer(hold.answer);
    const { queue } = queueOn(client);
    const promises = [queue.write(statement("write a", 1)), queue.write(statement("write b", 2))];
    const state = track(promises);
    await client.sent(isCommit);
    // Every write ran, the COMMIT is out: still nothing may be reported durable.
    await new Promise((resolve) => setImmediate(resolve));
    expect(state.settled).toEqual([false, false]);
    hold.release();
    expect(await Promise.all(promises)).toEqual([1, 2]);
  });

  it("writes issued while a group commits form the next group, in the order issued", async () => {
    const client = new FakeClient();
    const hold = holdFirst(isCommit);
    client.answer(hold.answer);
    const { queue } = queueOn(client);
    const first = [queue.write(statement("write a", "a")), queue.write(statement("write b", "b"))];
    await client.sent(isCommit);
    const second = [queue.write(statement("write c", "c")), queue.write(statement("write d", "d")), queue.write(statement("write e", "e"))];
    hold.release();
    expect(await Promise.all([...first, ...second])).toEqual(["a", "b", "c", "d", "e"]);
    expect(client.log.filter((text) => text.startsWith("BEGIN"))).toHaveLength(2);
    const secondBegin = client.log.lastIndexOf("BEGIN; SAVEPOINT write");
    expect(client.log.slice(secondBegin).filter((text) => text.startsWith("write "))).toEqual(["write c", "write d", "write e"]);
    expect(writes(client)).toEqual(["write a", "write b", "write c", "write d", "write e"]);
  });

  it("tells its observer each committed group's size", async () => {
    const client = new FakeClient();
    const { queue } = queueOn(client);
    const groups: number[] = [];
    queue.observe((seconds, size) => {
      expect(seconds).toBeGreaterThanOrEqual(0);
      groups.push(size);
    });
    await Promise.all([queue.write(statement("write a", 1)), queue.write(statement("write b", 2))]);
    await queue.write(statement("write c", 3));
    expect(groups).toEqual([2, 1]);
  });
});

describe("a write that fails", () => {
  it("rolls back alone to its savepoint: the others commit, it rejects with its own error", async () => {
    const unique = pgError("23505", "duplicate key value");
    const client = new FakeClient((text) => {
      if (text === "write b") throw unique;
      return undefined;
    });
    const { queue } = queueOn(client);
    const results = await Promise.allSettled([
      queue.write(statement("write a", 1)),
      queue.write(statement("write b", 2)),
      queue.write(statement("write c", 3)),
    ]);
    expect(results).toEqual([
      { status: "fulfilled", value: 1 },
      { status: "rejected", reason: unique },
      { status: "fulfilled", value: 3 },
    ]);
    expect(client.log).toEqual([
      "BEGIN; SAVEPOINT write",
      "write a",
      "RELEASE SAVEPOINT write; SAVEPOINT write",
      "write b",
      "ROLLBACK TO SAVEPOINT write; RELEASE SAVEPOINT write",
      "SAVEPOINT write",
      "write c",
      "RELEASE SAVEPOINT write; COMMIT",
    ]);
    expect(queue.transientRetries).toBe(0);
  });

  it("a Rollback undoes the write's statements and resolves with its value", async () => {
    const client = new FakeClient();
    const { queue } = queueOn(client);
    const value = await queue.write(async (context) => {
      await context.query("write x");
      context.notify("not sent");
      throw new Rollback("attempt-exists");
    });
    expect(value).toBe("attempt-exists");
    expect(client.log).toEqual(["BEGIN; SAVEPOINT write", "write x", "ROLLBACK TO SAVEPOINT write; RELEASE SAVEPOINT write", "COMMIT"]);
  });

  it("the notifications of the writes that succeeded go with the COMMIT, in their order", async () => {
    const client = new FakeClient((text) => {
      if (text === "write b") throw pgError("23514");
      return undefined;
    });
    const { queue } = queueOn(client);
    await Promise.allSettled([
      queue.write(statement("write a", 1, "note a")),
      queue.write(statement("write b", 2, "note b")),
      queue.write(statement("write c", 3, "it's c")),
    ]);
    expect(client.log.at(-1)).toBe(
      `RELEASE SAVEPOINT write; SELECT pg_notify('${CHANNEL}', note) FROM unnest(ARRAY['note a', 'it''s c']::text[]) AS note; COMMIT`,
    );
  });
});

describe("deadlock victims", () => {
  it.each([
    ["40P01", "deadlock detected"],
    ["40001", "could not serialize access"],
  ])("%s: the writes before the victim commit; the victim and the rest go first into the next group, in order", async (code, message) => {
    let failed = false;
    const hold = holdFirst(isCommit);
    const client = new FakeClient((text, values) => {
      if (text === "write c" && !failed) {
        failed = true;
        throw pgError(code, message);
      }
      return hold.answer(text, values);
    });
    const { queue } = queueOn(client);
    const first = ["a", "b", "c", "d"].map((name) => queue.write(statement(`write ${name}`, name)));
    const state = track(first);
    await client.sent(isCommit);
    // Issued while the victim's group commits: after the victim and the writes after it.
    const later = queue.write(statement("write e", "e"));
    hold.release();
    expect(await Promise.all([...first, later])).toEqual(["a", "b", "c", "d", "e"]);
    expect(state.settled).toEqual([true, true, true, true]);
    expect(writes(client)).toEqual(["write a", "write b", "write c", "write c", "write d", "write e"]);
    // The first group committed a and b only: the victim's savepoint was rolled back before COMMIT.
    const firstCommit = client.log.findIndex(isCommit);
    expect(client.log.slice(0, firstCommit + 1)).toEqual([
      "BEGIN; SAVEPOINT write",
      "write a",
      "RELEASE SAVEPOINT write; SAVEPOINT write",
      "write b",
      "RELEASE SAVEPOINT write; SAVEPOINT write",
      "write c",
      "ROLLBACK TO SAVEPOINT write; RELEASE SAVEPOINT write",
      "COMMIT",
    ]);
    expect(queue.transientRetries).toBe(1);
  });

  it("the writes before the victim settle with the first COMMIT, not after the retry", async () => {
    let failures = 0;
    const retried = deferred();
    const client = new FakeClient(async (text) => {
      if (text === "write b") {
        if (failures++ === 0) throw pgError("40P01");
        // The retry waits until the test has seen the first write settle.
        await retried.promise;
      }
      return undefined;
    });
    const { queue } = queueOn(client);
    const a = queue.write(statement("write a", "a"));
    const b = queue.write(statement("write b", "b"));
    expect(await a).toBe("a");
    retried.resolve();
    expect(await b).toBe("b");
  });

  it("a write that keeps being the victim is retried MAX_RETRIES (5) times, then fails with the deadlock", async () => {
    const deadlock = pgError("40P01", "deadlock detected");
    const client = new FakeClient((text) => {
      if (text === "write a") throw deadlock;
      return undefined;
    });
    const { queue } = queueOn(client);
    const other = queue.write(statement("write b", "b"));
    const result = await Promise.allSettled([queue.write(statement("write a", "a")), other]);
    expect(result[0]).toEqual({ status: "rejected", reason: deadlock });
    expect(result[1]).toEqual({ status: "fulfilled", value: "b" });
    expect(writes(client).filter((text) => text === "write a")).toHaveLength(6);
    expect(queue.transientRetries).toBe(5);
  });
});

describe("the connection", () => {
  it("lost mid-group fails the whole group, including the writes already written; the next write connects again", async () => {
    const first = new FakeClient();
    first.answer((text) => {
      if (text === "write b") {
        const reset = new Error("Connection terminated unexpectedly");
        first.drop(reset);
        throw reset;
      }
      return undefined;
    });
    const second = new FakeClient();
    const { queue, connects } = queueOn(first, second);
    const results = await Promise.allSettled([
      queue.write(statement("write a", 1)),
      queue.write(statement("write b", 2)),
      queue.write(statement("write c", 3)),
    ]);
    for (const result of results) {
      expect(result.status).toBe("rejected");
      expect((result as PromiseRejectedResult).reason.message).toBe("store write not committed: Connection terminated unexpectedly");
    }
    expect(writes(first)).toEqual(["write a", "write b"]);
    expect(first.log.at(-1)).toBe("ROLLBACK");
    expect(await queue.write(statement("write d", 4))).toBe(4);
    expect(connects()).toBe(2);
    expect(writes(second)).toEqual(["write d"]);
  });

  it("a query that timed out on the client abandons the connection: the group is 'not confirmed', with the query-timeout code", async () => {
    const client = new FakeClient((text) => {
      if (isCommit(text)) throw new Error("Query read timeout");
      return undefined;
    });
    const next = new FakeClient();
    const { queue, connects } = queueOn(client, next);
    const error = await queue.write(statement("write a", 1)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PostgresStoreError);
    expect(error).toMatchObject({
      code: "query-timeout",
      message: "store write not confirmed (it may have committed): Query read timeout",
    });
    expect(client.ended).toBe(1);
    expect(await queue.write(statement("write b", 2))).toBe(2);
    expect(connects()).toBe(2);
  });

  it("a statement timeout fails the group as not committed, with its code", async () => {
    const client = new FakeClient((text) => {
      if (isCommit(text)) throw pgError("57014", "canceling statement due to statement timeout");
      return undefined;
    });
    const { queue } = queueOn(client);
    await expect(queue.write(statement("write a", 1))).rejects.toMatchObject({
      code: "statement-timeout",
      message: "store write not committed: canceling statement due to statement timeout",
    });
  });

  it("a COMMIT answered ROLLBACK fails every write of the group", async () => {
    const client = new FakeClient((text) => (isCommit(text) ? { command: "ROLLBACK" } : undefined));
    const { queue } = queueOn(client);
    const results = await Promise.allSettled([queue.write(statement("write a", 1)), queue.write(statement("write b", 2))]);
    expect(results.map((r) => (r as PromiseRejectedResult).reason?.message)).toEqual([
      "store write not committed: the transaction was rolled back",
      "store write not committed: the transaction was rolled back",
    ]);
  });

  it("that cannot be made fails the group's writes with the reason, and a later write tries again", async () => {
    let attempts = 0;
    const client = new FakeClient();
    const queue = new WriteQueue(async () => {
      if (attempts++ === 0) throw new Error("timeout expired");
      return client.asClient();
    }, CHANNEL);
    await expect(queue.write(statement("write a", 1))).rejects.toMatchObject({
      code: "connect-timeout",
      message: "cannot connect the writer: connect-timeout: timeout expired",
    });
    expect(await queue.write(statement("write b", 2))).toBe(2);
  });
});

describe("close", () => {
  it("commits everything queued, then ends the connection; a write after close is refused", async () => {
    const client = new FakeClient();
    const { queue } = queueOn(client);
    const pending = [queue.write(statement("write a", 1)), queue.write(statement("write b", 2))];
    await queue.close();
    expect(client.ended).toBe(1);
    expect(client.log.at(-1)).toBe("RELEASE SAVEPOINT write; COMMIT");
    expect(await Promise.all(pending)).toEqual([1, 2]);
    await expect(queue.write(statement("write c", 3))).rejects.toThrow("the PostgresSessionStore is closed");
    expect(writes(client)).toEqual(["write a", "write b"]);
  });

  it("with nothing ever written it connects nothing", async () => {
    const client = new FakeClient();
    const { queue, connects } = queueOn(client);
    await queue.close();
    expect(connects()).toBe(0);
    expect(client.ended).toBe(0);
  });
});

describe("appends", () => {
  const RUNS: RunStatements = { input: "run input", output: "run output", group: "append group", packedRowBytes: () => 0 };

  function appendQueue(client: FakeClient): WriteQueue {
    return new WriteQueue(async () => client.asClient(), CHANNEL, RUNS);
  }

  /** An output append of `stream` at `sequence`; written alone (the careful way) it sends `write <stream>#<sequence>`. */
  function append(queue: WriteQueue, stream: string, sequence: number): Promise<string> {
    const name = `${stream}#${sequence}`;
    return queue.write(statement(`write ${name}`, name), outputAppend(stream, sequence));
  }

  /** The runs a group statement moves: every run but those of `stuck` streams. */
  function moveAllBut(...stuck: string[]): Answer {
    return (text, values) => {
      if (text !== "append group") return undefined;
      const [runs, , streams] = values as [number[], string[], string[]];
      return { rows: runs.filter((run) => !stuck.includes(streams[run]!)).map((run) => ({ run })) };
    };
  }

  it("a group of small appends is one statement, outside a transaction, one run per stream", async () => {
    const client = new FakeClient();
    const queue = appendQueue(client);
    const values: unknown[][] = [];
    client.answer((text, v) => {
      values.push([...(v ?? [])]);
      return moveAllBut()(text, v);
    });
    const done = await Promise.all([append(queue, "a", 0), append(queue, "b", 7), append(queue, "a", 1)]);
    expect(done).toEqual([undefined, undefined, undefined]);
    expect(client.log).toEqual(["append group"]);
    // Runs in `writeOrder`: stream a's two appends together, then b's; their counts and starts.
    const [runs, logs, streams, starts, totals] = values[0]!;
    expect({ runs, logs, streams, starts, totals }).toEqual({
      runs: [0, 1],
      logs: ["output", "output"],
      streams: ["a", "b"],
      starts: ["0", "7"],
      totals: ["2", "1"],
    });
    // The channel, then each run's ownership epoch (none: these writers are not owners).
    expect(values[0]!.slice(-2)).toEqual([CHANNEL, [null, null]]);
  });

  it("a run whose stream did not move goes the careful way in the next group, for its own outcome", async () => {
    const client = new FakeClient();
    client.answer((text, values) => {
      if (text === "run output") return { rows: [] }; // b still does not continue where its run starts
      if (text === "write b#3") throw pgError("23505", "b#3 is not the next item");
      return moveAllBut("b")(text, values);
    });
    const queue = appendQueue(client);
    const results = await Promise.allSettled([append(queue, "a", 0), append(queue, "b", 3), append(queue, "b", 4)]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(client.log[0]).toBe("append group");
    // Then b's run as one statement in a savepoint; it did not move, so each append alone.
    expect(client.log.slice(1)).toEqual([
      "BEGIN; SAVEPOINT run",
      "run output",
      "ROLLBACK TO SAVEPOINT run; RELEASE SAVEPOINT run",
      "SAVEPOINT write",
      "write b#3",
      "ROLLBACK TO SAVEPOINT write; RELEASE SAVEPOINT write",
      "SAVEPOINT write",
      "write b#4",
      "RELEASE SAVEPOINT write; COMMIT",
    ]);
  });

  it("a run that moves in the careful way is one statement, and sends its note with the COMMIT", async () => {
    const client = new FakeClient();
    let groups = 0;
    client.answer((text, values) => {
      if (text === "append group" && groups++ === 0) throw pgError("40P01");
      if (text === "run output") return { rows: [{ session_id: "s1" }] };
      return moveAllBut()(text, values);
    });
    const queue = appendQueue(client);
    await Promise.all([append(queue, "a", 0), append(queue, "a", 1)]);
    // The group statement failed as a whole (nothing written): the same appends, the careful way.
    expect(client.log).toEqual([
      "append group",
      "BEGIN; SAVEPOINT run",
      "run output",
      `RELEASE SAVEPOINT run; SELECT pg_notify('${CHANNEL}', note) FROM unnest(ARRAY['s1:a']::text[]) AS note; COMMIT`,
    ]);
  });

  it("a group statement whose answer was lost fails its appends as 'not confirmed'", async () => {
    const client = new FakeClient();
    client.answer((text) => {
      if (text === "append group") {
        const reset = new Error("Connection terminated unexpectedly");
        client.drop(reset);
        throw reset;
      }
      return undefined;
    });
    const queue = appendQueue(client);
    const results = await Promise.allSettled([append(queue, "a", 0), append(queue, "b", 0)]);
    expect(results.map((r) => (r as PromiseRejectedResult).reason?.message)).toEqual([
      "store write not confirmed (it may have committed): Connection terminated unexpectedly",
      "store write not confirmed (it may have committed): Connection terminated unexpectedly",
    ]);
  });
});
