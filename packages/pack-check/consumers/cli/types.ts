// Type-checked under nodenext and bundler: the parts of a checkpoint are importable from the CLI.
import { decodeCheckpoint, type Checkpoint, type PendingStart, type Selector, type SchemaValueJson } from "@golem-stream/cli";

export function selectorOf(bytes: Uint8Array): Selector {
  const checkpoint: Checkpoint = decodeCheckpoint(bytes);
  return checkpoint.selector;
}
export type Start = PendingStart;
export const empty: SchemaValueJson = { kind: "record", value: { fields: [] } };
