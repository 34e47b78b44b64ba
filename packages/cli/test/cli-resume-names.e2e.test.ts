/**
 * The names of nested output streams (`$[3].items`, printed in every item line and in the item
 * that holds the stream) are the same in every run of one invocation: `invoke --checkpoint`
 * killed, `resume` killed, `resume` to the end. A name that one run gave one stream and the next
 * run gave another would mix two streams' items under one name in the collected output.
 * test/fixtures/agents/paced-groups.js: group g's items are g * 1000 + i, so every item line
 * says which stream it came from.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { lines, run, scratchDir, start, startServeAgents, waitFor } from "./support/processes.js";
import type { Running, ServerProcess } from "./support/processes.js";

const GROUPS = 8;
const PER = 3;
let server: ServerProcess;

beforeAll(async () => {
  server = await startServeAgents("test/fixtures/agents/paced-groups.js");
});
afterAll(async () => {
  await server?.stop();
});

/** An item line: `item` in plain JSON, or `native` for a stream whose element type this run does not know. */
interface ItemLine {
  readonly stream: string;
  readonly item?: unknown;
  readonly native?: { readonly value: unknown };
}

function itemLines(stdout: Buffer): ItemLine[] {
  return lines(stdout)
    .map((line) => JSON.parse(line) as ItemLine | { result: unknown })
    .filter((line): line is ItemLine => "stream" in line);
}

/** The value of a nested stream's item line. */
function valueOf(line: ItemLine): number {
  return (line.item ?? line.native?.value) as number;
}

/** Waits until `running` printed `count` items of the outer stream, then kills it: a crash. */
async function killAfterGroups(running: Running, count: number): Promise<ItemLine[]> {
  await waitFor(running, () => itemLines(running.stdout()).filter((line) => line.stream === "$").length >= count, `${count} groups`);
  running.child.kill("SIGKILL");
  return itemLines((await running.done).stdout);
}

describe("nested stream names in one run", () => {
  // Every item waits for its checkpoint write before the next is taken: a nested stream's reader
  // must wait for the item that holds it while that item is queued behind the write, not name the
  // stream by its id as if no run of this process printed its parent.
  it("a checkpoint written after every item: each nested stream is named by its place", async () => {
    const checkpoint = join(scratchDir(), "every-item.ckpt");
    const args = ["invoke", "paced", "groups", "-a", "paced", "-c", "{}", "5", "2", "0", "--checkpoint", checkpoint];
    const result = await run([...args, "--checkpoint-interval", "0"], { env: server.env });
    expect(result.code, result.stderr).toBe(EXIT.success);
    const nested = itemLines(result.stdout).filter((line) => line.stream !== "$");
    expect(nested.map((line) => line.stream)).toEqual(nested.map((line) => `$[${Math.floor(valueOf(line) / 1000)}].items`));
    expect(nested).toHaveLength(10);
  });
});

describe("nested stream names across resume", () => {
  it("every run names each nested stream as the first did, and never gives one name to two streams", async () => {
    const checkpoint = join(scratchDir(), "groups.ckpt");
    const invoke = ["invoke", "paced", "groups", "-a", "paced", "-c", "{}", String(GROUPS), String(PER), "100"];
    // A checkpoint write after every item: a run killed after two groups has saved the first, and
    // the next run continues after it, in the middle of `$`.
    const everyItem = ["--checkpoint-interval", "0"];
    const first = await killAfterGroups(start([...invoke, "--checkpoint", checkpoint, ...everyItem], { env: server.env }), 2);
    const second = await killAfterGroups(start(["resume", checkpoint, ...everyItem], { env: server.env }), 2);
    const last = await run(["resume", checkpoint], { env: server.env });
    expect(last.code, last.stderr).toBe(EXIT.success);
    const printed = [...first, ...second, ...itemLines(last.stdout)];

    // A group's item names its stream after the group's place in `$`: `group-5` holds `$[5].items`.
    const groups = printed.filter((line) => line.stream === "$").map((line) => line.item as { name: string; items: string });
    for (const group of groups) expect(group.items).toBe(`$[${group.name.slice("group-".length)}].items`);
    // Each name labels one stream's items only, whatever the run (group g's items are g * 1000 + i),
    // and a stream has at most two names: its place (`$[5].items`), and its stream id (`$?…`) in a
    // run that does not print the group that holds it.
    const groupsByName = new Map<string, Set<number>>();
    const namesByGroup = new Map<number, Set<string>>();
    for (const line of printed.filter((l) => l.stream !== "$")) {
      const group = Math.floor(valueOf(line) / 1000);
      groupsByName.set(line.stream, (groupsByName.get(line.stream) ?? new Set()).add(group));
      namesByGroup.set(group, (namesByGroup.get(group) ?? new Set()).add(line.stream));
    }
    for (const [name, owners] of groupsByName) {
      expect([...owners], `the streams named ${name}`).toHaveLength(1);
      const index = /^\$\[(\d+)\]\.items$/.exec(name)?.[1];
      if (index !== undefined) expect([...owners]).toEqual([Number(index)]);
      else expect(name).toMatch(/^\$\?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    }
    for (const [group, names] of namesByGroup) {
      const others = [...names].filter((name) => name !== `$[${group}].items`);
      expect(others.length, `the names of group ${group}: ${[...names].join(", ")}`).toBeLessThanOrEqual(1);
    }
    // Nothing was skipped: every group and every item of it was printed by some run.
    expect(new Set(groups.map((group) => group.name)).size).toBe(GROUPS);
    const items = new Set(printed.filter((l) => l.stream !== "$").map(valueOf));
    expect(items.size).toBe(GROUPS * PER);
  });
});
