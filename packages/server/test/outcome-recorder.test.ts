/**
 * Ending every open stream (`OutcomeRecorder.terminalizeAll`: a session given up after
 * `detachedSessionTimeoutMs`, a failure, a restart's recovery) ends each output with the server's
 * reason. Ending an input wakes the agent, and `reverse`-like agents fail on it: had an output's
 * producer still been running then, the agent's failure could end that output first, as
 * `producer-error` (a cluster scenario on PostgreSQL once ended its output so).
 */
import { expect, it } from "vitest";
import type { OutputOutcome, ServerCancelReason } from "@golem-stream/wire";
import { OutcomeRecorder, type OutcomeHost } from "../src/invocation/outcome-recorder.js";

interface FakeStream {
  readonly streamId: string;
  readonly direction: "input" | "output";
  readonly terminal: boolean;
  readonly producer?: AbortController;
}

it("stops every output's producer before it ends any input, then ends the outputs with the same reason", async () => {
  const outputs: FakeStream[] = [
    { streamId: "out-1", direction: "output", terminal: false, producer: new AbortController() },
    { streamId: "out-2", direction: "output", terminal: false, producer: new AbortController() },
  ];
  const input: FakeStream = { streamId: "in", direction: "input", terminal: false };
  const seen: string[] = [];
  const producersRunning = (): string[] => outputs.filter((o) => o.producer?.signal.aborted === false).map((o) => o.streamId);
  const host = {
    // Creation order: the method's input before the result's outputs, as for `reverse`.
    streams: () => [input, ...outputs],
    producers: {
      appendTerminal: async (stream: FakeStream, outcome: OutputOutcome) => void seen.push(`${stream.streamId} ${JSON.stringify(outcome)}`),
    },
    cancelInputByServer: async (stream: FakeStream, reason: ServerCancelReason) =>
      void seen.push(`${stream.streamId} cancelled ${reason}; producers running: [${producersRunning().join(", ")}]`),
  } as unknown as OutcomeHost;

  await new OutcomeRecorder(host).terminalizeAll("transport-detached");

  expect(seen).toEqual([
    "in cancelled transport-detached; producers running: []",
    'out-1 {"kind":"cancelled","reason":"transport-detached"}',
    'out-2 {"kind":"cancelled","reason":"transport-detached"}',
  ]);
});
