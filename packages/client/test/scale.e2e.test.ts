/**
 * Scale on one node, bounded (the full run with memory figures is
 * bench/scale.mjs): many sessions whose streams stay idle while concurrent
 * `digest` uploads run beside them. Nothing may be refused or lost: every
 * upload's digest is that of its bytes, and every idle session, released
 * afterwards, delivers its reversed input in order. No timing is asserted.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { createClient, inputStream, type Invocation } from "../src/index.js";
import { demo, firstStream, randomChunks, record, sha256 } from "./support/demo.js";
import { startServer, TOKEN } from "./support/embedded.js";

const IDLE_SESSIONS = 100;
const UPLOADS = 10;
const UPLOAD_BYTES = 256 * 1024;

let server: Awaited<ReturnType<typeof startServer>>;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.dispose();
});

interface IdleSession {
  readonly release: () => void;
  readonly call: Invocation;
  readonly words: readonly string[];
}

it(`${IDLE_SESSIONS} idle sessions and ${UPLOADS} concurrent digest uploads: every upload and every idle session's input arrives`, async () => {
  const client = createClient({ url: server.url, token: TOKEN });
  const idle: IdleSession[] = [];
  for (let i = 0; i < IDLE_SESSIONS; i++) {
    let release = (): void => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const words = [`idle-${i}-a`, `idle-${i}-b`];
    const source = async function* (): AsyncGenerator<string> {
      await gate;
      yield* words;
    };
    const call = client.invoke({ ...demo, method: "reverse", methodParameters: record(inputStream.strings(source())) });
    idle.push({ release, call, words });
  }
  // Every idle session is accepted and its result (the output stream) recorded before the uploads start.
  const outputs = await Promise.all(idle.map((session) => firstStream(session.call)));

  const uploads = Array.from({ length: UPLOADS }, () => randomChunks(UPLOAD_BYTES, 64 * 1024));
  const results = await Promise.all(
    uploads.map(async ({ chunks }) => {
      const call = client.invoke({ ...demo, method: "digest", methodParameters: record(inputStream.bytes(chunks)) });
      const result = await call.result;
      await call.finished;
      return result.kind === "value" ? result.value : undefined;
    }),
  );
  results.forEach((value, i) => {
    expect(value).toEqual({
      kind: "record",
      value: {
        fields: [
          { kind: "u64", value: String(UPLOAD_BYTES) },
          { kind: "string", value: sha256(uploads[i]!.all) },
        ],
      },
    });
  });

  for (const session of idle) session.release();
  const delivered = await Promise.all(
    outputs.map(async (stream) => {
      const seen: unknown[] = [];
      for await (const item of stream.values()) seen.push(item.value);
      return seen;
    }),
  );
  await Promise.all(idle.map((session) => session.call.finished));
  delivered.forEach((seen, i) => expect(seen).toEqual(idle[i]!.words.map((w) => Array.from(w).reverse().join(""))));
}, 180_000);
