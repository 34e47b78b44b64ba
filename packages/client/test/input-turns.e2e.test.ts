/**
 * A large input source that hands its items over at once (a generator, read without a promise
 * per item) or on promises alone (an async generator) is sent in turns of the event loop, over
 * real loopback to the embedded server: a timer set when the first item is taken runs after a
 * few turns' budget of items, while the source is still being read. Before, the feeder read on
 * until its 8 MiB window was full, and the process's timers, other sockets and other
 * invocations waited for all of it (hundreds of milliseconds).
 */
import { echoContract } from "@golem-stream/contract/demo";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, typedAgent } from "../src/index.js";
import { TURN_ITEMS } from "../src/event-loop-turns.js";
import { startServer, TOKEN } from "./support/embedded.js";

let server: Awaited<ReturnType<typeof startServer>>;
beforeAll(async () => void (server = await startServer()));
afterAll(async () => server.dispose());

/** Far more items than a few turns take (and than 1 MiB of frames, when the socket could push back). */
const ITEMS = 50_000;

/** The items, counting how many were taken, and how many had been when a timer set at the first one ran. */
function watchedItems() {
  const seen = { taken: 0, takenWhenTimerRan: undefined as number | undefined };
  function* items(): Generator<string> {
    for (let at = 0; at < ITEMS; at++) {
      if (at === 0) setTimeout(() => (seen.takenWhenTimerRan = seen.taken), 0);
      seen.taken++;
      yield `item ${at}`;
    }
  }
  return { seen, items };
}

describe("an input source that never waits for the event loop", () => {
  it.each(["generator", "async generator"] as const)("%s: a timer runs while it is being sent", async (kind) => {
    const { seen, items } = watchedItems();
    const source =
      kind === "generator"
        ? items()
        : (async function* () {
            yield* items();
          })();
    const echo = await typedAgent(createClient({ url: server.url, token: TOKEN }), echoContract, {
      application: "demo",
      environment: "default",
      constructorArgs: { name: "turns" },
    });
    const tally = await echo.tally({ input: source });
    expect(tally.items).toBe(BigInt(ITEMS));
    expect(seen.takenWhenTimerRan).toBeDefined();
    expect(seen.takenWhenTimerRan).toBeLessThanOrEqual(8 * TURN_ITEMS);
  });
});
