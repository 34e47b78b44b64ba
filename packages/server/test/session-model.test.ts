/**
 * Model-based test of a live session: fast-check generates sequences of
 * client moves (items, resends, conflicts, gaps, ends, cancels, invalid
 * channels, cuts, resumes, takeovers, exact replays, stale and conflicting
 * attempts) against one `reverse` session of the real runtime in memory,
 * and compares the server's answers with a small model of what the client
 * knows (support/session-model.ts, support/session-commands.ts).
 *
 * `pnpm test` runs MODEL_RUNS (default 200) sequences; `pnpm test:model-soak`
 * runs many more. A failure prints fast-check's seed and path, and the
 * counterexample's replayPath: replay it with MODEL_SEED, MODEL_PATH and
 * MODEL_REPLAY_PATH (see docs/protocol/server.md, *Model-based test*).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MOVES, movesRun, sessionCommands } from "./support/session-commands.js";
import { startedSession, type SessionUnderTest } from "./support/session-model.js";

const env = process.env;
const runs = Number(env["MODEL_RUNS"] ?? 200);
const maxCommands = Number(env["MODEL_COMMANDS"] ?? 30);
/** Replaying one failure: fast-check's seed and path, and the commands' replayPath, from its report. */
const replay =
  env["MODEL_SEED"] === undefined
    ? undefined
    : { seed: Number(env["MODEL_SEED"]), path: env["MODEL_PATH"], replayPath: env["MODEL_REPLAY_PATH"] };

describe("a live session against its model", () => {
  it(
    replay === undefined ? `keeps the protocol's invariants under ${runs} random sequences of client moves` : `replays seed ${replay.seed}`,
    async () => {
      let sequences = 0;
      await fc.assert(
        fc.asyncProperty(sessionCommands(maxCommands, replay?.replayPath), async (commands) => {
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
        replay === undefined ? { numRuns: runs } : { seed: replay.seed, ...(replay.path === undefined ? {} : { path: replay.path, endOnFailure: true }) },
      );
      if (replay !== undefined) {
        expect(sequences).toBeGreaterThan(0);
        return;
      }
      expect(sequences).toBe(runs);
      // Not vacuous: every kind of move ran (its check let it) at least once.
      if (env["MODEL_RUNS"] !== undefined) console.log("moves run:", Object.fromEntries(movesRun));
      expect(MOVES.filter((move) => (movesRun.get(move) ?? 0) === 0)).toEqual([]);
    },
    // The default covers the bounded run; a soak gets time in proportion to its runs.
    Math.max(15_000, runs * 100),
  );
});
