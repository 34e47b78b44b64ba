/**
 * `detach()` stops the handle: its streams hand out nothing more, queued items included, the item
 * the consumer holds stays undelivered, and no cursor moves past the state `detach()` returned, so
 * a takeover from that state delivers the rest exactly once, starting with the held item. The real
 * server on loopback.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { SchemaValueJson } from "@golem-stream/wire";
import type { Client, ResumeState } from "../src/index.js";
import { collect, demo, firstStream, record, u32 } from "./support/demo.js";
import { startServerWithClient, type TestServer } from "./support/embedded.js";

let server: TestServer;
let client: Client;
beforeAll(async () => ({ server, client } = await startServerWithClient()));
afterAll(async () => server.dispose());

const COUNT = 100;

it("a detached handle's streams hand out nothing more, and the takeover from its state delivers the rest once", async () => {
  const checkpoints: ResumeState[] = [];
  const call = client.invoke({
    ...demo,
    method: "count",
    methodParameters: record(u32(COUNT), u32(0)),
    onCheckpoint: (state) => void checkpoints.push(state),
  });
  const stream = await firstStream(call);
  const iterator = stream.values()[Symbol.asyncIterator]();
  const seen: unknown[] = [];
  for (let i = 0; i < 3; i++) seen.push(((await iterator.next()).value as SchemaValueJson).value);
  // Every item is queued here once the server's end arrived (fewer than one stream queues).
  await stream.ended;
  expect(stream.queuedEntries).toBe(COUNT - 3);

  const state = call.detach()!;
  const savedBefore = checkpoints.length;
  await expect(iterator.next()).rejects.toMatchObject({ kind: "aborted" });
  expect(stream.queuedEntries).toBe(0);
  // The held item (2) was not delivered: neither the state nor a checkpoint moved past item 1.
  expect(call.state).toEqual(state);
  await expect(call.finished).rejects.toMatchObject({ kind: "aborted" });
  expect(checkpoints.length).toBe(savedBefore);

  const second = client.takeover(state);
  const rest = (await collect((await firstStream(second)).values())).map((item) => item.value);
  expect([...seen.slice(0, 2), ...rest]).toEqual(Array.from({ length: COUNT }, (_, i) => i));
  await second.finished;
});
