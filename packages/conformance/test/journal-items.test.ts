/** How the `restart.rerun-follows-journal` check reads a `journal` stream, and what it refuses as another shape. */
import { describe, expect, it } from "vitest";
import type { SchemaValueJson, ServerMessage } from "@golem-stream/wire";
import { Mismatch } from "../src/index.js";
import { journalItems } from "../src/demo.js";

const item = (value: unknown, sequence = 0n): ServerMessage => ({
  type: "outputStreamItem",
  channel: 3,
  sequence,
  cursorToken: `c${sequence}`,
  mappings: [],
  value: value as SchemaValueJson,
});
const journal = (index: unknown): unknown => ({
  kind: "record",
  value: { fields: [index, { kind: "string", value: "step" }, { kind: "u64", value: "17" }, { kind: "f64", value: 0.5 }] },
});

describe("journalItems", () => {
  it("reads each item's index and its three journaled values, on its channel only", () => {
    const messages = [
      item(journal({ kind: "u32", value: 0 })),
      { ...item(journal({ kind: "u32", value: 9 }), 1n), channel: 4 } as ServerMessage,
      item(journal({ kind: "u32", value: 1 }), 1n),
    ];
    expect(journalItems(messages, 3)).toEqual([
      {
        index: 0,
        journaled: { step: { kind: "string", value: "step" }, now: { kind: "u64", value: "17" }, random: { kind: "f64", value: 0.5 } },
      },
      {
        index: 1,
        journaled: { step: { kind: "string", value: "step" }, now: { kind: "u64", value: "17" }, random: { kind: "f64", value: 0.5 } },
      },
    ]);
  });

  it("refuses an item that is not a record of four fields, or whose index is not a u32, with a Mismatch saying so", () => {
    expect(() => journalItems([item({ kind: "u32", value: 0 })], 3)).toThrow(
      new Mismatch('a journal item is not a record of 4 fields: {"kind":"u32","value":0}'),
    );
    expect(() => journalItems([item({ kind: "record", value: { fields: [{ kind: "u32", value: 0 }] } })], 3)).toThrow(
      /not a record of 4 fields/,
    );
    expect(() => journalItems([item(journal({ kind: "string", value: "0" }))], 3)).toThrow(/index is not a u32/);
  });
});
