/**
 * The `text` agent type, declared once: the server implements it
 * (agents.ts) and the client calls it (client.ts) with the same types.
 *
 * Both methods take the text as a `stream<u8>` upload, so a file of any
 * size streams through without being held whole:
 * - `lines` streams back one record per line while the text is still
 *   uploading (both directions at once);
 * - `stats` answers once the upload ends: counts and the most frequent words.
 */
import { defineAgentType, t } from "@golem-stream/contract";

export const APPLICATION = "examples";
export const ENVIRONMENT = "default";

export const textContract = defineAgentType({
  name: "text",
  // Per agent: whether words are counted without regard to case ("The" and "the" are one word).
  constructor: t.record({ ignoreCase: t.bool() }),
  methods: {
    lines: {
      params: t.record({ text: t.stream(t.u8()) }),
      result: t.stream(t.record({ number: t.u32(), words: t.u32(), chars: t.u32(), text: t.string() })),
    },
    stats: {
      params: t.record({ text: t.stream(t.u8()), top: t.u32() }),
      result: t.record({
        lines: t.u64(),
        words: t.u64(),
        bytes: t.u64(),
        topWords: t.list(t.record({ word: t.string(), count: t.u64() })),
      }),
    },
  },
});
