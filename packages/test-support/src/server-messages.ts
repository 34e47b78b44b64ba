/** Server messages the transport tests of several packages send: their shape, not any session's meaning. */
import type { ServerMessage } from "@golem-stream/wire";

/** Output item `sequence` of the `stream<string>` on channel 2, with a placeholder cursor token. */
export const stringOutputItem = (sequence: number, text: string): ServerMessage => ({
  type: "outputStreamItem",
  channel: 2,
  cursorToken: `cursor-${sequence}`,
  mappings: [],
  sequence: BigInt(sequence),
  value: { kind: "string", value: text },
});
