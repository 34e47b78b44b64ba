/**
 * Recording a failure when this node's copy of an output is behind the store's (it learned late of
 * output another node committed, then wrote after what it knew and the store refused): each
 * output's end goes where the store's stream ends, so the failure is recorded at once. Ended at
 * the count this copy knew, every attempt was refused the same way, and the session stayed
 * running for good, its client silent.
 */
import { expect, it } from "vitest";
import type { OutputOutcome } from "@golem-stream/wire";
import { OutcomeRecorder, type OutcomeHost } from "../src/invocation/outcome-recorder.js";
import { StreamState } from "../src/invocation/stream-state.js";
import type { StreamRecord } from "../src/store/session-store.js";

const REFUSED = "output event does not continue the stream";

it("a failure ends each output where the store's stream ends when this copy's count is behind it", async () => {
  const record = (count: bigint): StreamRecord => ({
    streamId: "out",
    sessionId: "s",
    ordinal: 0,
    direction: "output",
    elementKind: "value",
    elementGraph: "{}",
    coordinate: "result",
    provisionalRef: undefined,
    parent: { kind: "result" } as unknown as StreamRecord["parent"],
    token: "t",
    count,
    inputTerminal: undefined,
    outputTerminal: false,
  });
  // The store holds 8 items; this copy knew of 5 (and its write at 5 was refused).
  const stored = { count: 8n, outputTerminal: false };
  const stream = new StreamState(record(5n));
  const ends: bigint[] = [];
  let finished: string | undefined;
  let recordFailed!: () => void;
  const refusedAgain = new Promise<string>((resolve) => (recordFailed = () => resolve("refused again")));
  const host = {
    sessionId: "s",
    deps: {
      logger: { info: () => undefined, warn: () => undefined, error: () => recordFailed() },
      observer: {},
      now: () => 0,
      store: {
        getStream: async () => ({ ...record(stored.count), outputTerminal: stored.outputTerminal }),
        finish: async (_id: string, text: string) => void (finished = text),
      },
    },
    record: () => ({ sessionId: "s", application: "a", environment: "e", agentType: "t", method: "m" }),
    finished: () => finished !== undefined,
    ownerEpoch: () => 2n,
    streams: () => [stream],
    abortInvocation: () => undefined,
    lostOwnership: () => undefined,
    finishCommitted: () => undefined,
    producers: {
      settled: async () => undefined,
      // As OutputProducers does after a refused write: the end goes where this copy's committed items end.
      appendTerminal: async (s: StreamState, _outcome: OutputOutcome) => {
        ends.push(s.outputCommitted);
        if (s.outputCommitted !== stored.count) throw new Error(REFUSED);
        stored.outputTerminal = true;
        s.outputTerminal = true;
      },
    },
  } as unknown as OutcomeHost;

  const outcome = await Promise.race([new OutcomeRecorder(host).fail(new Error(REFUSED)).then(() => "recorded"), refusedAgain]);

  expect(outcome).toBe("recorded");
  expect(ends).toEqual([8n]);
  expect(finished).toContain("invocation-failed");
});
