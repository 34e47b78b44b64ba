/**
 * Model-based test of a live session: fast-check generates sequences of
 * client moves (items, resends, conflicts, gaps, ends, cancels, invalid
 * channels, cuts, resumes, takeovers, exact replays, stale and conflicting
 * attempts) against one `reverse` session of the real runtime in memory,
 * and compares the server's answers with a small model of what the client
 * knows (support/session-model.ts, support/session-commands.ts).
 *
 * `pnpm test` runs MODEL_RUNS (default 200) sequences; `pnpm test:model-soak`
 * runs many more. A failure prints fast-check's seed and path: replay it
 * with MODEL_SEED=<seed> MODEL_PATH=<path> (see docs/protocol/server.md).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MOVES, movesRun, sessionCommands } from "./support/session-commands.js";
import { startedSession, type SessionUnderTest } from "./support/session-model.js";

const runs = Number(process.env["MODEL_RUNS"] ?? 200);
const seed = process.env["MODEL_SEED"] === undefined ? undefined : Number(process.env["MODEL_SEED"]);
const path = process.env["MODEL_PATH"];
const maxCommands = Number(process.env["MODEL_COMMANDS"] ?? 30);

describe("a live session against its model", () => {
  it(
    `keeps the protocol's invariants under ${runs} random sequences of client moves`,
    async () => {
      let sequences = 0;
      await fc.assert(
        fc.asyncProperty(sessionCommands(maxCommands), async (commands) => {
          let real: SessionUnderTest | undefined;
          try {
            await fc.asyncModelRun(async () => {
              const started = await startedSession();
              real = started.real;
              return started;
            }, commands);
          } finally {
            await real?.dispose();
          }
          sequences++;
        }),
        { numRuns: runs, ...(seed === undefined ? {} : { seed }), ...(path === undefined ? {} : { path, endOnFailure: true }) },
      );
      expect(sequences).toBeGreaterThanOrEqual(runs);
      // Not vacuous: every kind of move ran (its check let it) at least once.
      if (process.env["MODEL_RUNS"] !== undefined) console.log("moves run:", Object.fromEntries(movesRun));
      expect(MOVES.filter((move) => (movesRun.get(move) ?? 0) === 0)).toEqual([]);
    },
    // The default covers the bounded run; a soak gets time in proportion to its runs.
    Math.max(15_000, runs * 1_000),
  );
});
