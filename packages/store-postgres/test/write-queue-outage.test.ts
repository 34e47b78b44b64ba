/**
 * The writer through a database outage, against scripted stand-ins for its connections and a
 * clock the test moves (no PostgreSQL, no waiting): groups whose connection was lost or could
 * not be made are retried within the grace, in order; a group whose COMMIT got no answer is
 * checked (its commit marker once `pg_xact_status` says its transaction ended, or the streams'
 * counts for a group statement) before anything is written again; past the grace the waiting writes fail with `unavailable`, and later ones fail
 * at once until PostgreSQL answers again.
 */
import { describe, expect, it } from "vitest";
import { OutageGrace, type OutageClock, type StoreOutageEvent } from "@golem-stream/server/store";
import { CommitMarker } from "../src/lost-commit.js";
import { isUnavailable, PostgresStoreError } from "../src/store-error.js";
import { WriteQueue, type RunStatements } from "../src/write-queue.js";
import { outputAppend, statement } from "./support/writes.js";
import { FakeClient, pgError, type Answer } from "./support/fake-client.js";

const CHANNEL = "golem_changes";
const GRACE_MS = 6000;
const MARKERS = "golem.writer_groups";
const WRITER = "writer-1";
/** The marker statement of the group numbered `group`. */
const marker = (group: number): string => new CommitMarker(MARKERS, WRITER).statement(new FakeClient(), group);
const MARKER_READ = `SELECT group_seq FROM ${MARKERS} WHERE writer = $1`;

/** The number the last group written set its commit marker to. */
function lastMarked(log: readonly string[]): number {
  const text = [...log].reverse().find((t) => t.includes(`INSERT INTO ${MARKERS}`));
  return Number(/VALUES \('[^']*', (\d+)\)/.exec(text ?? "")?.[1]);
}

/** A clock whose waits move it by exactly the wait (a retry costs no real time). */
function steppingClock(): OutageClock & { time: number } {
  const clock = {
    time: 0,
    now: () => clock.time,
    sleep: async (ms: number) => {
      clock.time += ms;
    },
  };
  return clock;
}

const refused = (): Error => Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });

/**
 * A database the writer connects to: each connect either fails (while `down`) or returns the
 * next of a series of clients, all answering through `answer`, which a test may change.
 */
class Database {
  readonly clients: FakeClient[] = [];
  readonly events: StoreOutageEvent[] = [];
  readonly clock = steppingClock();
  down = false;
  /** Connects that fail before `down` is lifted by itself (then `onConnect` runs at each). */
  failConnects = 0;
  onConnect: (() => void) | undefined;
  connects = 0;
  answer: Answer = () => undefined;

  queue(runs?: RunStatements): WriteQueue {
    const grace = new OutageGrace(GRACE_MS, this.clock, () => (event) => this.events.push(event));
    return new WriteQueue(
      async () => {
        this.connects++;
        this.onConnect?.();
        if (this.failConnects > 0) {
          this.failConnects--;
          throw refused();
        }
        if (this.down) throw refused();
        const client = new FakeClient((text, values) => this.answer(text, values));
        this.clients.push(client);
        return client.asClient();
      },
      CHANNEL,
      runs,
      grace,
      new CommitMarker(MARKERS, WRITER),
    );
  }

  /** Every statement sent, on every connection, in order. */
  get log(): string[] {
    return this.clients.flatMap((client) => client.log);
  }

  /** The `write ...` statements of the connection that is used last. */
  get lastWrites(): string[] {
    return this.clients.at(-1)!.log.filter((text) => text.startsWith("write "));
  }
}

/** Breaks the connection that sent `text` as `pg` does, and throws what `pg` throws. */
function lose(client: FakeClient | undefined): never {
  const reset = new Error("Connection terminated unexpectedly");
  client?.drop(reset);
  throw reset;
}

const isCommit = (text: string): boolean => text.endsWith("COMMIT");

describe("a database that cannot be reached", () => {
  it("holds the writes until it can be, then commits them in the order issued, each once", async () => {
    const db = new Database();
    const queue = db.queue();
    db.failConnects = 4;
    // c is issued during the outage, at the third failed connect.
    let later: Promise<number> | undefined;
    db.onConnect = () => {
      if (db.connects === 3) later = queue.write(statement("write c", 3));
    };
    const first = [queue.write(statement("write a", 1)), queue.write(statement("write b", 2))];
    expect(await Promise.all(first)).toEqual([1, 2]);
    expect(await later).toBe(3);
    expect(db.log.filter((text) => text.startsWith("write "))).toEqual(["write a", "write b", "write c"]);
    expect(db.events.map((e) => e.kind).filter((k) => k !== "retry")).toEqual(["unavailable", "available"]);
    expect(db.events.filter((e) => e.kind === "retry").length).toBeGreaterThanOrEqual(4);
  });

  it("past the grace fails the waiting writes with `unavailable`, later ones at once, until it answers again", async () => {
    const db = new Database();
    const queue = db.queue();
    db.down = true;
    const results = await Promise.allSettled([queue.write(statement("write a", 1)), queue.write(statement("write b", 2))]);
    for (const result of results) {
      expect(result.status).toBe("rejected");
      const reason = (result as PromiseRejectedResult).reason as PostgresStoreError;
      expect(reason).toBeInstanceOf(PostgresStoreError);
      expect(reason.code).toBe("unavailable");
    }
    expect(db.clock.time).toBe(GRACE_MS);
    expect(db.events.filter((e) => e.kind === "grace-exceeded")).toEqual([
      { kind: "grace-exceeded", seconds: 6, writes: 2, error: "connect ECONNREFUSED 127.0.0.1:5432" },
    ]);
    // Still down: one connect, no wait, and the write fails.
    const connects = db.connects;
    await expect(queue.write(statement("write c", 3))).rejects.toMatchObject({ code: "unavailable" });
    expect(db.connects).toBe(connects + 1);
    expect(db.clock.time).toBe(GRACE_MS);
    db.down = false;
    expect(await queue.write(statement("write d", 4))).toBe(4);
    expect(db.events.at(-1)).toMatchObject({ kind: "available" });
    // A new outage gets a new grace.
    db.failConnects = 3;
    const waiting = queue.write(statement("write e", 5));
    expect(await waiting).toBe(5);
  });

  it("a full disk is not an outage: the write fails at once, nothing is retried", async () => {
    const db = new Database();
    const queue = db.queue();
    db.answer = (text) => {
      if (text === "write a") throw pgError("53100", "could not extend file: No space left on device");
      return undefined;
    };
    await expect(queue.write(statement("write a", 1))).rejects.toThrow("No space left on device");
    expect(db.events).toEqual([]);
    expect(db.clock.time).toBe(0);
  });
});

describe("a connection lost during a group", () => {
  it("before the COMMIT: the whole group is written again on a new connection, before the writes issued meanwhile", async () => {
    const db = new Database();
    const queue = db.queue();
    let lost = false;
    let late: Promise<number> | undefined;
    db.answer = (text) => {
      if (text === "write b" && !lost) {
        lost = true;
        // A write issued while its group is failing: it must not overtake a or b.
        late = queue.write(statement("write c", 3));
        lose(db.clients[0]);
      }
      return undefined;
    };
    const values = await Promise.all([queue.write(statement("write a", 1)), queue.write(statement("write b", 2))]);
    expect(values).toEqual([1, 2]);
    expect(await late).toBe(3);
    expect(db.clients[0]!.log.filter((t) => t.startsWith("write "))).toEqual(["write a", "write b"]);
    expect(db.clients[1]!.log.filter((t) => t.startsWith("write "))).toEqual(["write a", "write b", "write c"]);
    // Nothing asked about the first transaction: it never sent its COMMIT.
    expect(db.log.some((t) => t.includes("pg_xact_status"))).toBe(false);
  });

  it("after the COMMIT, which committed: the writes settle with their outcomes, nothing is written twice", async () => {
    const db = new Database();
    const queue = db.queue();
    let xid: string | undefined;
    let lost = false;
    db.answer = (text, values) => {
      if (text.includes("pg_xact_status")) {
        xid = String(values?.[0]);
        return { rows: [{ status: "committed" }] };
      }
      if (text === MARKER_READ) return { rows: [{ group_seq: String(lastMarked(db.log)) }] };
      if (isCommit(text) && !lost) {
        lost = true;
        lose(db.clients[0]);
      }
      if (text === "write b") throw pgError("23505", "b broke a rule");
      return undefined;
    };
    const results = await Promise.allSettled([
      queue.write(statement("write a", 1)),
      queue.write(statement("write b", 2)),
      queue.write(statement("write c", 3)),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((results[1] as PromiseRejectedResult).reason.message).toBe("b broke a rule");
    expect(db.clients[0]!.log[0]).toBe(`BEGIN; ${marker(1)}; SAVEPOINT write`);
    expect(xid).toMatch(/^\d+$/);
    // The check is all the second connection sends: the transaction ended, then its marker.
    expect(db.clients[1]!.log).toEqual(["SELECT pg_xact_status($1::xid8) AS status", MARKER_READ]);
    expect(await queue.write(statement("write d", 4))).toBe(4);
    expect(db.lastWrites).toEqual(["write d"]);
  });

  it("after the COMMIT, which did not commit: the group is written again", async () => {
    const db = new Database();
    const queue = db.queue();
    let lost = false;
    db.answer = (text) => {
      if (text.includes("pg_xact_status")) return { rows: [{ status: "aborted" }] };
      if (isCommit(text) && !lost) {
        lost = true;
        lose(db.clients[0]);
      }
      return undefined;
    };
    expect(await Promise.all([queue.write(statement("write a", 1)), queue.write(statement("write b", 2))])).toEqual([1, 2]);
    expect(db.lastWrites).toEqual(["write a", "write b"]);
    expect(db.clients).toHaveLength(2);
  });

  it("after the COMMIT, while the old transaction is still in progress: asks again until PostgreSQL knows", async () => {
    const db = new Database();
    const queue = db.queue();
    let lost = false;
    let asked = 0;
    db.answer = (text) => {
      if (text.includes("pg_xact_status")) return { rows: [{ status: asked++ < 2 ? "in progress" : "committed" }] };
      // Visible only once the transaction ended: read before, it would say "not committed".
      if (text === MARKER_READ) return { rows: [{ group_seq: String(asked > 2 ? lastMarked(db.log) : 0) }] };
      if (isCommit(text) && !lost) {
        lost = true;
        lose(db.clients[0]);
      }
      return undefined;
    };
    expect(await queue.write(statement("write a", 1))).toBe(1);
    expect(asked).toBe(3);
    expect(db.log.filter((t) => t === MARKER_READ)).toHaveLength(1);
    expect(db.log.filter((t) => t === "write a")).toHaveLength(1);
  });

  it("after the COMMIT, when PostgreSQL no longer knows the transaction (too old): the marker tells, committed", async () => {
    const db = new Database();
    const queue = db.queue();
    let lost = false;
    db.answer = (text) => {
      if (text.includes("pg_xact_status")) return { rows: [{ status: null }] };
      if (text === MARKER_READ) return { rows: [{ group_seq: String(lastMarked(db.log)) }] };
      if (isCommit(text) && !lost) {
        lost = true;
        lose(db.clients[0]);
      }
      return undefined;
    };
    expect(await queue.write(statement("write a", 1))).toBe(1);
    expect(db.log.filter((t) => t === "write a")).toHaveLength(1);
  });

  it("after the COMMIT, when a crash handed its transaction id out again: pg_xact_status says committed, the marker does not, the group is written again", async () => {
    const db = new Database();
    const queue = db.queue();
    let lost = false;
    db.answer = (text) => {
      // Somebody else's transaction, which got the lost group's id after the restart.
      if (text.includes("pg_xact_status")) return { rows: [{ status: "committed" }] };
      // The marker as the group before left it: the lost group's never committed.
      if (text === MARKER_READ) return { rows: [{ group_seq: String(lastMarked(db.log) - 1) }] };
      // The second group's COMMIT: the first one committed and set the marker to 1.
      if (isCommit(text) && !lost && db.log.includes("write a")) {
        lost = true;
        lose(db.clients[0]);
      }
      return undefined;
    };
    expect(await queue.write(statement("write z", 0))).toBe(0);
    const values = await Promise.all([queue.write(statement("write a", 1)), queue.write(statement("write b", 2))]);
    expect(values).toEqual([1, 2]);
    expect(db.log.filter((t) => t === "write z")).toHaveLength(1);
    expect(db.lastWrites).toEqual(["write a", "write b"]);
    expect(db.clients).toHaveLength(2);
    // Written again in a transaction of its own, with a marker of its own.
    expect(db.clients[0]!.log.filter((t) => t.includes(`INSERT INTO ${MARKERS}`))).toHaveLength(2);
    expect(db.clients[1]!.log.at(2)).toBe(`BEGIN; ${marker(3)}; SAVEPOINT write`);
  });

  it("after the COMMIT, when the writer has no marker: fails as not confirmed", async () => {
    const db = new Database();
    const connect = async () => {
      const client = new FakeClient((text) => {
        if (isCommit(text) && db.clients.length === 1) lose(db.clients[0]);
        return undefined;
      });
      db.clients.push(client);
      return client.asClient();
    };
    const queue = new WriteQueue(connect, CHANNEL, undefined, new OutageGrace(GRACE_MS, db.clock));
    await expect(queue.write(statement("write a", 1))).rejects.toMatchObject({
      code: "unavailable",
      message: "store write not confirmed (it may have committed): Connection terminated unexpectedly",
    });
    expect(db.clients[0]!.log[0]).toBe("BEGIN; SAVEPOINT write");
  });

  it("after the COMMIT, when PostgreSQL restarted from a crash and calls the id in the future: nothing committed, the group is written again", async () => {
    const db = new Database();
    const queue = db.queue();
    let lost = false;
    db.answer = (text, values) => {
      if (text.includes("pg_xact_status")) throw pgError("22023", `transaction ID ${String(values?.[0])} is in the future`);
      if (isCommit(text) && !lost) {
        lost = true;
        lose(db.clients[0]);
      }
      return undefined;
    };
    expect(await queue.write(statement("write a", 1))).toBe(1);
    expect(db.lastWrites).toEqual(["write a"]);
    expect(db.clients).toHaveLength(2);
  });

  it("PostgreSQL shutting down (57P01) is an outage too", async () => {
    const db = new Database();
    const queue = db.queue();
    let shutdown = false;
    db.answer = (text) => {
      if (text === "write a" && !shutdown) {
        shutdown = true;
        throw pgError("57P01", "terminating connection due to administrator command");
      }
      return undefined;
    };
    expect(await queue.write(statement("write a", 1))).toBe(1);
    expect(db.events.map((e) => e.kind)).toContain("available");
  });
});

describe("a group statement of appends whose answer was lost", () => {
  const RUNS: RunStatements = {
    input: "run input",
    output: "run output",
    group: "append group",
    packedRowBytes: () => 0,
    counts: "counts",
  };

  function append(queue: WriteQueue, stream: string, sequence: number, epoch?: bigint): Promise<unknown> {
    return queue.write(statement(`write ${stream}#${sequence}`, undefined), { ...outputAppend(stream, sequence), epoch });
  }

  /** Answers the group statement (moving every run) after losing the first one's answer; `counts` as given, every stream at `epoch`. */
  function script(db: Database, counts: Record<string, number>, epoch = 1): { groups: () => number } {
    let groups = 0;
    db.answer = (text, values) => {
      if (text === "counts")
        return {
          rows: Object.entries(counts).map(([stream_id, count]) => ({
            stream_id,
            count: String(count),
            owner_epoch: String(epoch),
            direction: "output",
            terminal: false,
          })),
        };
      if (text !== "append group") return undefined;
      if (groups++ === 0) lose(db.clients[0]);
      const [runs] = values as [number[]];
      return { rows: runs.map((run) => ({ run })) };
    };
    return { groups: () => groups };
  }

  it("that committed (every count at its run's end): settles, and is not written again", async () => {
    const db = new Database();
    const queue = db.queue(RUNS);
    const { groups } = script(db, { a: 2, b: 8 });
    await Promise.all([append(queue, "a", 0), append(queue, "a", 1), append(queue, "b", 7)]);
    expect(groups()).toBe(1);
    expect(db.clients[1]!.log).toEqual(["counts"]);
  });

  it("that did not commit (a count still where its run starts): is written again", async () => {
    const db = new Database();
    const queue = db.queue(RUNS);
    const { groups } = script(db, { a: 2, b: 7 });
    await Promise.all([append(queue, "a", 0), append(queue, "a", 1), append(queue, "b", 7)]);
    expect(groups()).toBe(2);
  });

  it("whose streams moved past their runs at another ownership epoch (claimed meanwhile): fails as not confirmed, never settled", async () => {
    const db = new Database();
    const queue = db.queue(RUNS);
    // Another node claimed the session (epoch 2) and appended where the lost run would have gone.
    const { groups } = script(db, { a: 2 }, 2);
    const results = await Promise.allSettled([append(queue, "a", 0, 1n), append(queue, "a", 1, 1n)]);
    expect(results.map((r) => (r as PromiseRejectedResult).reason?.message)).toEqual([
      "store write not confirmed (it may have committed): Connection terminated unexpectedly",
      "store write not confirmed (it may have committed): Connection terminated unexpectedly",
    ]);
    expect(groups()).toBe(1);
  });

  it("whose streams are past their runs at the runs' own epoch: settles", async () => {
    const db = new Database();
    const queue = db.queue(RUNS);
    const { groups } = script(db, { a: 2 }, 1);
    await Promise.all([append(queue, "a", 0, 1n), append(queue, "a", 1, 1n)]);
    expect(groups()).toBe(1);
  });

  it("whose counts tell nothing: fails as not confirmed", async () => {
    const db = new Database();
    const queue = db.queue(RUNS);
    script(db, { a: 1 });
    const results = await Promise.allSettled([append(queue, "a", 0), append(queue, "a", 1)]);
    expect(results.map((r) => (r as PromiseRejectedResult).reason?.message)).toEqual([
      "store write not confirmed (it may have committed): Connection terminated unexpectedly",
      "store write not confirmed (it may have committed): Connection terminated unexpectedly",
    ]);
  });
});

describe("what counts as the database being unavailable", () => {
  const socket = (code: string): Error => Object.assign(new Error(`connect ${code}`), { code });

  it("lost or refused connections, a server shutting down or starting up, too many connections, a connect timeout", () => {
    for (const error of [
      socket("ECONNREFUSED"),
      socket("ECONNRESET"),
      socket("EPIPE"),
      new AggregateError([socket("ECONNREFUSED"), socket("ECONNREFUSED")]),
      new Error("Connection terminated unexpectedly"),
      new Error("Client has encountered a connection error and is not queryable"),
      pgError("57P01", "terminating connection due to administrator command"),
      pgError("57P03", "the database system is starting up"),
      pgError("08006"),
      pgError("53300", "sorry, too many clients already"),
      new Error("timeout expired"),
      new PostgresStoreError("unavailable", "x"),
    ]) {
      expect(isUnavailable(error), error.message).toBe(true);
    }
  });

  it("not a statement's own failure, a full disk, a statement or query timeout, or anything that is not an error", () => {
    for (const error of [
      pgError("23505"),
      pgError("40P01"),
      pgError("53100", "could not extend file: No space left on device"),
      pgError("57014", "canceling statement due to statement timeout"),
      new Error("Query read timeout"),
      new AggregateError([socket("ECONNREFUSED"), new Error("something else")]),
      "ECONNREFUSED",
      null,
    ]) {
      expect(isUnavailable(error), String(error)).toBe(false);
    }
  });
});
