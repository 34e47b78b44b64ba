/**
 * Model-based tests of a live session: fast-check generates sequences of
 * client moves against one session of the real runtime in memory and
 * compares the server's answers with a small model of what the client
 * knows (support/session-model.ts). Two sessions: `reverse` (string items
 * in and out; moves in support/reverse-traffic.ts and reverse-attach.ts, as
 * an arbitrary in support/session-commands.ts: items, resends,
 * conflicts, gaps, ends, cancels, invalid channels, cuts, resumes,
 * takeovers, exact replays, races, stale and conflicting attempts, the
 * detached timeout) and `digest` (packed bytes in, a result; moves in
 * support/digest-commands.ts: straddling resends, failures).
 *
 * `pnpm test` runs MODEL_RUNS (default 200) sequences of each;
 * `pnpm test:model-soak` runs many more. A failure prints fast-check's seed
 * and path, and the counterexample's replayPath: replay it with MODEL_SEED,
 * MODEL_PATH and MODEL_REPLAY_PATH (and the MODEL_COMMANDS of the failing
 * run), and `-t reverse` or `-t digest` (docs/protocol/server.md,
 * *Model-based test of a live session*).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DIGEST_MOVES, digestCommands } from "./support/digest-commands.js";
import { MOVES, movesRun, sessionCommands } from "./support/session-commands.js";
import { startedSession, type SessionModel, type SessionUnderTest } from "./support/session-model.js";

const env = process.env;
const runs = Number(env["MODEL_RUNS"] ?? 200);
const maxCommands = Number(env["MODEL_COMMANDS"] ?? 30);
/** Replaying one failure: fast-check's seed and path, and the commands' replayPath, from its report. */
const replay =
  env["MODEL_SEED"] === undefined
    ? undefined
    : { seed: Number(env["MODEL_SEED"]), path: env["MODEL_PATH"], replayPath: env["MODEL_REPLAY_PATH"] };

interface ModelTest<Item> {
  readonly method: "reverse" | "digest";
  readonly commands: (
    maxCommands: number,
    replayPath?: string,
  ) => fc.Arbitrary<Iterable<fc.AsyncCommand<SessionModel<Item>, SessionUnderTest>>>;
  readonly moves: readonly string[];
  readonly movesRun: ReadonlyMap<string, number>;
}

function modelTest<Item>({ method, commands, moves, movesRun: ran }: ModelTest<Item>): void {
  it(
    // The title names MODEL_COMMANDS: a replay needs the same value as the run that failed.
    replay === undefined
      ? `${method}: keeps the protocol's invariants under ${runs} random sequences of up to ${maxCommands} client moves`
      : `${method}: replays seed ${replay.seed} (up to ${maxCommands} moves)`,
    async () => {
      let sequences = 0;
      await fc.assert(
        fc.asyncProperty(commands(maxCommands, replay?.replayPath), async (sequence) => {
          let real: SessionUnderTest | undefined;
          try {
            await fc.asyncModelRun(async () => {
              const started = await startedSession<Item>(method);
              real = started.real;
              return started;
            }, sequence);
          } finally {
            await real?.dispose();
          }
          sequences++;
        }),
        replay === undefined
          ? { numRuns: runs }
          : { seed: replay.seed, ...(replay.path === undefined ? {} : { path: replay.path, endOnFailure: true }) },
      );
      if (replay !== undefined) {
        expect(sequences).toBeGreaterThan(0);
        return;
      }
      expect(sequences).toBe(runs);
      // Not vacuous: every kind of move ran (its check let it) at least once.
      if (env["MODEL_RUNS"] !== undefined)
        console.log(`${method} moves run:`, Object.fromEntries(moves.map((move) => [move, ran.get(move) ?? 0])));
      expect(moves.filter((move) => (ran.get(move) ?? 0) === 0)).toEqual([]);
    },
    // The default covers the bounded run; a soak gets time in proportion to its runs.
    Math.max(15_000, runs * 100),
  );
}

describe("a live session against its model", () => {
  modelTest({ method: "reverse", commands: sessionCommands, moves: MOVES, movesRun });
  modelTest({ method: "digest", commands: digestCommands, moves: DIGEST_MOVES, movesRun });
});
