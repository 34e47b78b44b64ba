/**
 * A view that cannot hand out a stream's next item — `js()` without the stream's element schema
 * (a nested stream whose parent item a takeover does not replay), `bytes()` on a stream of native
 * values — throws `invalid-argument` before taking it: nothing counts as delivered, nothing is
 * cancelled, and the stream can still be read with another view. The real server on loopback.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Client, OutputStream } from "../src/index.js";
import { collect, demo, firstStream, record, u32 } from "./support/demo.js";
import { startServerWithClient, type TestServer } from "./support/embedded.js";

let server: TestServer;
let client: Client;
beforeAll(async () => ({ server, client } = await startServerWithClient()));
afterAll(async () => server.dispose());

const PER_GROUP = 5;

it("js() on a nested stream whose schema a takeover could not learn takes nothing; values() then reads every item", async () => {
  const call = client.invoke({ ...demo, method: "groups", methodParameters: record(u32(2), u32(PER_GROUP)) });
  const groups = (await firstStream(call)).js()[Symbol.asyncIterator]();
  const first = (await groups.next()).value as { items: OutputStream };
  await groups.next(); // group 0 is delivered now, so the takeover does not replay it
  const token = first.items.streamToken;
  const state = call.detach()!;

  const second = client.takeover(state);
  await second.accepted;
  const items = second.stream(token)!; // mapped by the acceptance
  expect(items.schema).toBeUndefined();
  await expect(items.js()[Symbol.asyncIterator]().next()).rejects.toMatchObject({
    kind: "invalid-argument",
    message: expect.stringMatching(/element schema is unknown/) as unknown,
  });
  expect(items.cancelRequested).toBeUndefined();
  expect((await collect(items.values())).map((item) => item.value)).toEqual(Array.from({ length: PER_GROUP }, (_, i) => i));
  expect(await items.ended).toEqual({ kind: "ok" });
  await second.cancel();
});

it("bytes() on a stream of native values takes nothing; values() then reads every item", async () => {
  const call = client.invoke({ ...demo, method: "count", methodParameters: record(u32(3), u32(0)) });
  const stream = await firstStream(call);
  await expect(stream.bytes()[Symbol.asyncIterator]().next()).rejects.toMatchObject({ kind: "invalid-argument" });
  expect((await collect(stream.values())).map((item) => item.value)).toEqual([0, 1, 2]);
  await call.finished;
});
