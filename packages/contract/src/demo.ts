/**
 * The demo catalogue's `echo` agent type (decisions-v1 section 7, plus
 * `tally` and `journal`, which only this project's embedded server serves) as a contract: the server implements it (`@golem-stream/server`'s demo host) and
 * clients call it with the same types. Its graphs are the ones the demo
 * served before contracts existed, except that `blobs` bounds its count and
 * size in the schema.
 */
import { t } from "@golem-stream/schema-value";
import { defineAgentType } from "./contract.js";

export const DEMO_APPLICATION = "demo";
export const DEMO_ENVIRONMENT = "default";

/** The largest blob `echo.blobs` makes: the protocol's binary item limit (16 MiB, decisions-v1 §6). */
export const DEMO_MAX_BLOB_BYTES = 16 * 1024 * 1024;
/** The most blobs one `echo.blobs` call makes. */
export const DEMO_MAX_BLOBS = 65_536;

export const echoContract = defineAgentType({
  name: "echo",
  constructor: t.record({ name: t.string() }),
  // Every method but `fail` is deterministic given its parameters and input: after a restart
  // the server runs it again and continues it (the server's docs/durable-execution.md).
  durability: "replay",
  methods: {
    reverse: { params: t.record({ input: t.stream(t.string()) }), result: t.stream(t.string()) },
    digest: { params: t.record({ data: t.stream(t.u8()) }), result: t.record({ bytes: t.u64(), sha256: t.string() }) },
    count: { params: t.record({ to: t.u32(), delayMs: t.u32() }), result: t.stream(t.u32()) },
    // Bounded in the schema, so a start asking for more is a validation-error before the method
    // allocates anything: one blob at most the 16 MiB binary item limit, at most 65 536 of them.
    blobs: {
      params: t.record({
        count: t.u32({ max: { kind: "unsigned", value: String(DEMO_MAX_BLOBS) } }),
        size: t.u32({ max: { kind: "unsigned", value: String(DEMO_MAX_BLOB_BYTES) } }),
      }),
      result: t.stream(t.binary()),
    },
    split: {
      params: t.record({ data: t.stream(t.u8()) }),
      result: t.record({ upper: t.stream(t.u8()), lines: t.stream(t.string()) }),
    },
    groups: {
      params: t.record({ groups: t.u32(), per: t.u32() }),
      result: t.stream(t.record({ name: t.string(), items: t.stream(t.u32()) })),
    },
    fail: { params: t.record({ after: t.u32() }), result: t.stream(t.u32()), durability: "none" },
    // Beyond decisions-v1 section 7: a one-way string sink, so small-item
    // throughput can be measured without an output stream of the same size.
    tally: { params: t.record({ input: t.stream(t.string()) }), result: t.record({ items: t.u64(), bytes: t.u64() }) },
    // Beyond decisions-v1 section 7: a `count` whose every item repeats three values the method
    // journaled once before its first item (a step's result, the time, a random number), so a
    // client can see whether a re-run after a restart got them back from the journal.
    journal: {
      params: t.record({ to: t.u32(), delayMs: t.u32() }),
      result: t.stream(t.record({ index: t.u32(), step: t.string(), now: t.u64(), random: t.f64() })),
    },
  },
});
