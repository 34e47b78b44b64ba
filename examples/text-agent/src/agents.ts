/**
 * The module `golem-stream serve --agents dist/agents.js` loads: its default
 * export is the catalogue to serve, the `text` agent type implemented in
 * application `examples`, environment `default`.
 */
import { defineCatalogue, implement } from "@golem-stream/server";
import { APPLICATION, ENVIRONMENT, textContract } from "./contract.js";
import { linesOf, WordCounts, wordsOf } from "./text.js";

/** The most words `stats` lists in `topWords`, whatever `top` asks. */
export const MAX_TOP = 100;

const text = implement(textContract, {
  // An output stream is any (async) iterable: each line goes out as soon as it has come in.
  async lines(_ctx, { text }) {
    return (async function* () {
      let number = 0;
      for await (const line of linesOf(text)) {
        number += 1;
        yield { number, words: wordsOf(line).length, chars: [...line].length, text: line };
      }
    })();
  },

  async stats(ctx, { text, top }) {
    const counts = new WordCounts();
    let lines = 0;
    let words = 0;
    let bytes = 0;
    const counted = (async function* () {
      for await (const chunk of text) {
        bytes += chunk.length;
        yield chunk;
      }
    })();
    for await (const line of linesOf(counted)) {
      lines += 1;
      for (const word of wordsOf(line)) {
        words += 1;
        counts.add(ctx.constructorArgs.ignoreCase ? word.toLowerCase() : word);
      }
    }
    const topWords = counts.top(Math.min(top, MAX_TOP)).map(({ word, count }) => ({ word, count: BigInt(count) }));
    return { lines: BigInt(lines), words: BigInt(words), bytes: BigInt(bytes), topWords };
  },
});

export default defineCatalogue({ applications: { [APPLICATION]: { [ENVIRONMENT]: [text] } } });
