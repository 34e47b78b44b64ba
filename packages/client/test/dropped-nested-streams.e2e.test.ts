/**
 * Streams nested in items the consumer never received (it left the loop of their parent stream
 * first) are dropped with `consumer-drop`, so they neither stall the session nor keep the
 * invocation from finishing; a nested stream the application already reads is left alone.
 * The real server on loopback, `groups(4, 2000)`: each group's stream holds far more items than
 * one stream may queue (256), so an unread one stops the socket.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client, OutputStream } from "../src/index.js";
import { collect, demo, firstStream, record, u32 } from "./support/demo.js";
import { startServerWithClient, type TestServer } from "./support/embedded.js";

let server: TestServer;
let client: Client;
beforeAll(async () => ({ server, client } = await startServerWithClient()));
afterAll(async () => server.dispose());

const GROUPS = 4;
const PER_GROUP = 2000;

/** The groups' item streams other than `kept`, once the invocation finished. */
function othersThan(streams: readonly OutputStream[], outer: OutputStream, kept: OutputStream): OutputStream[] {
  return streams.filter((stream) => stream !== outer && stream !== kept);
}

describe("streams nested in items the consumer never received", () => {
  it("are dropped when the consumer leaves the parent's loop: the group it kept reads to its end and the call finishes", async () => {
    const call = client.invoke({ ...demo, method: "groups", methodParameters: record(u32(GROUPS), u32(PER_GROUP)) });
    const outer = await firstStream(call);
    let first: { name: string; items: OutputStream } | undefined;
    for await (const group of outer.js()) {
      first = group as { name: string; items: OutputStream };
      break;
    }
    const items = await collect(first!.items.js());
    expect(items).toEqual(Array.from({ length: PER_GROUP }, (_, i) => i));
    expect(await call.finished).toEqual({ kind: "success" });
    // Dropped here: nothing left to hand out, whether the server's end was its cancel or came first.
    const dropped = othersThan(call.streams, outer, first!.items);
    expect(dropped).toHaveLength(GROUPS - 1);
    for (const stream of dropped) expect(await collect(stream)).toEqual([]);
  });

  it("are dropped too when the application cancels every stream it was handed", async () => {
    const call = client.invoke({ ...demo, method: "groups", methodParameters: record(u32(GROUPS), u32(PER_GROUP)) });
    const outer = await firstStream(call);
    for await (const group of outer.js()) {
      await (group as { items: OutputStream }).items.cancel();
      break;
    }
    expect(await call.finished).toEqual({ kind: "success" });
  });

  it("are not dropped while the application reads them (found through the stream event)", async () => {
    const call = client.invoke({ ...demo, method: "groups", methodParameters: record(u32(GROUPS), u32(PER_GROUP)) });
    const reads: Promise<unknown[]>[] = [];
    let announced = 0;
    call.on("stream", (stream) => {
      // The first is the result's own stream, the outer one, read below.
      if (announced++ > 0) reads.push(collect(stream.js()));
    });
    const outer = await firstStream(call);
    for await (const group of outer.values()) {
      void group;
      break;
    }
    expect(await call.finished).toEqual({ kind: "success" });
    // Each group's stream the server sent before it saw the drop was read to its end.
    expect(reads.length).toBeGreaterThan(0);
    for (const values of await Promise.all(reads)) expect(values).toEqual(Array.from({ length: PER_GROUP }, (_, i) => i));
  });
});
