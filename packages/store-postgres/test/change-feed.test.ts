/**
 * The change feed's receiving side against a scripted stand-in for its LISTEN connection (no
 * PostgreSQL): which notifications reach which subscribers, and what a lost connection does
 * (reconnect with a doubling delay, LISTEN again, tell the store which sessions may have missed
 * changes). Time is vitest's fake timers, moved by the test.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { SessionChange } from "@golem-stream/server/store";
import { ChangeFeed, encodeNote, parseNote } from "../src/change-feed.js";
import { FakeClient, pgError } from "./support/fake-client.js";

const CHANNEL = "golem_changes";

describe("notes", () => {
  it("round-trip every kind of change", () => {
    const changes: SessionChange[] = [
      { kind: "output", streamId: "o1" },
      { kind: "input", streamId: "i1" },
      { kind: "result" },
      { kind: "finished" },
      { kind: "attached", generation: "3", attachment: "t" },
      { kind: "cancel", streamId: "o1", reason: "cancelled" },
    ];
    for (const change of changes) expect(parseNote(encodeNote("s1", change))).toEqual({ sessionId: "s1", change });
  });

  it.each([
    undefined,
    "",
    "not json",
    "null",
    "[]",
    '{"s":1,"c":{"kind":"output"}}',
    '{"s":"s1"}',
    '{"s":"s1","c":null}',
    '{"s":"s1","c":{"kind":"unknown"}}',
  ])("ignore what this store did not send: %j", (payload) => {
    expect(parseNote(payload)).toBeUndefined();
  });
});

describe("ChangeFeed", () => {
  let clients: FakeClient[];
  let failConnects: number;
  let errors: Error[];
  let unavailable: string[];
  let reconnected: string[][];
  let connectError: () => Error;

  function feed(): ChangeFeed {
    return new ChangeFeed({
      connect: async () => {
        if (failConnects > 0) {
          failConnects--;
          throw connectError();
        }
        const client = new FakeClient();
        clients.push(client);
        return client.asClient();
      },
      channel: CHANNEL,
      onReconnect: async (sessionIds) => void reconnected.push(sessionIds),
      onError: (error) => void errors.push(error),
      onUnavailable: (error, retryInMs) => void unavailable.push(`${error.message} (${retryInMs} ms)`),
    });
  }

  const notify = (client: FakeClient, payload: string, channel = CHANNEL) =>
    client.emit("notification", { channel, payload, processId: 1 });

  beforeEach(() => {
    vi.useFakeTimers();
    clients = [];
    failConnects = 0;
    errors = [];
    unavailable = [];
    reconnected = [];
    connectError = () => pgError("ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:5432");
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("listens on its channel and hands each change to its session's subscribers only", async () => {
    const changes = feed();
    await changes.start();
    expect(clients[0]!.log).toEqual([`LISTEN "${CHANNEL}"`]);
    const seen: string[] = [];
    changes.subscribe("s1", (change) => seen.push(`first ${change.kind}`));
    changes.subscribe("s2", (change) => seen.push(`other ${change.kind}`));
    notify(clients[0]!, encodeNote("s1", { kind: "result" }));
    notify(clients[0]!, encodeNote("s1", { kind: "finished" }), "another_channel");
    notify(clients[0]!, "garbage");
    expect(seen).toEqual(["first result"]);
  });

  it("the same function subscribed twice is called twice; each unsubscribe removes one", async () => {
    const changes = feed();
    await changes.start();
    const seen: string[] = [];
    const listener = (change: SessionChange) => void seen.push(change.kind);
    const first = changes.subscribe("s1", listener);
    const second = changes.subscribe("s1", listener);
    changes.dispatch("s1", { kind: "result" });
    first();
    first();
    changes.dispatch("s1", { kind: "finished" });
    second();
    changes.dispatch("s1", { kind: "alive" } as SessionChange);
    expect(seen).toEqual(["result", "result", "finished"]);
  });

  it("a throwing subscriber is reported and does not stop the others", async () => {
    const changes = feed();
    await changes.start();
    const seen: string[] = [];
    changes.subscribe("s1", () => {
      throw new Error("subscriber broke");
    });
    changes.subscribe("s1", (change) => void seen.push(change.kind));
    changes.dispatch("s1", { kind: "result" });
    expect(seen).toEqual(["result"]);
    expect(errors.map((e) => e.message)).toEqual(["subscriber broke"]);
  });

  it("a lost connection is reported as unavailability, reconnected after 100 ms doubling while connecting fails, and the store told which sessions to re-read", async () => {
    const changes = feed();
    await changes.start();
    changes.subscribe("s1", () => undefined);
    changes.subscribe("s2", () => undefined);
    failConnects = 2;
    clients[0]!.drop(new Error("Connection terminated unexpectedly"));
    expect(clients[0]!.ended).toBe(1);
    expect(unavailable).toEqual(["Connection terminated unexpectedly (100 ms)"]);
    await vi.advanceTimersByTimeAsync(99);
    expect(unavailable).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1); // 100 ms: the first attempt fails
    expect(unavailable).toEqual(["Connection terminated unexpectedly (100 ms)", "connect ECONNREFUSED 127.0.0.1:5432 (200 ms)"]);
    await vi.advanceTimersByTimeAsync(199);
    expect(unavailable).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1); // 200 ms more: the second fails
    expect(unavailable).toHaveLength(3);
    // None of it is an error: the outage is reported where outages are.
    expect(errors).toEqual([]);
    await vi.advanceTimersByTimeAsync(400); // 400 ms more: connected
    expect(clients).toHaveLength(2);
    expect(clients[1]!.log).toEqual([`LISTEN "${CHANNEL}"`]);
    expect(changes.reconnects).toBe(1);
    expect(reconnected).toEqual([["s1", "s2"]]);
    // The delay starts again from 100 ms after a success.
    clients[1]!.emit("end");
    await vi.advanceTimersByTimeAsync(100);
    expect(clients).toHaveLength(3);
    expect(changes.reconnects).toBe(2);
  });

  it("a reconnect refused for another reason than an outage is an error, and tried again", async () => {
    const changes = feed();
    await changes.start();
    failConnects = 1;
    connectError = () => pgError("28P01", "password authentication failed for user golem");
    clients[0]!.drop(new Error("Connection terminated unexpectedly"));
    await vi.advanceTimersByTimeAsync(100);
    expect(errors.map((e) => e.message)).toEqual(["password authentication failed for user golem"]);
    await vi.advanceTimersByTimeAsync(200);
    expect(clients).toHaveLength(2);
    expect(changes.reconnects).toBe(1);
  });

  it("a first LISTEN that fails rejects start and ends the connection", async () => {
    const changes = new ChangeFeed({
      connect: async () => {
        const client = new FakeClient(() => {
          throw pgError("42501", "permission denied");
        });
        clients.push(client);
        return client.asClient();
      },
      channel: CHANNEL,
      onReconnect: async () => undefined,
      onError: (error) => void errors.push(error),
      onUnavailable: () => undefined,
    });
    await expect(changes.start()).rejects.toThrow("permission denied");
    expect(clients[0]!.ended).toBe(1);
  });

  it("close ends the connection, forgets the subscribers and stops reconnecting", async () => {
    const changes = feed();
    await changes.start();
    const seen: string[] = [];
    changes.subscribe("s1", (change) => void seen.push(change.kind));
    failConnects = 1;
    clients[0]!.drop(new Error("reset"));
    await changes.close();
    await vi.advanceTimersByTimeAsync(10_000);
    // No attempt to connect was made: the failing one is still there to be used.
    expect(failConnects).toBe(1);
    expect(clients).toHaveLength(1);
    expect(changes.reconnects).toBe(0);
    changes.dispatch("s1", { kind: "result" });
    expect(seen).toEqual([]);
    failConnects = 0;
    const open = feed();
    await open.start();
    await open.close();
    expect(clients[1]!.ended).toBe(1);
  });
});
