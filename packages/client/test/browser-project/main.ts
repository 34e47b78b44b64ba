/**
 * A browser application's use of @golem-stream/client, type-checked by
 * test/browser-types.e2e.test.ts with the DOM library and no Node types
 * (tsconfig.json): every public type the package exposes must resolve here.
 */
import {
  ClientError,
  createClient,
  inputStream,
  webSocketTransport,
  type Invocation,
  type OutputChunk,
  type ResumeState,
} from "@golem-stream/client";

const client = createClient({
  url: location.origin,
  getToken: async () => sessionStorage.getItem("token") ?? "",
  transport: webSocketTransport({ handshakeTimeoutMs: 5000 }),
  reconnect: { initialDelayMs: 100, maxDelayMs: 2000, maxAttempts: 10 },
});

const demo = {
  application: "demo",
  environment: "default",
  agentType: "echo",
  constructorParameters: { kind: "record", value: { fields: [{ kind: "string", value: "me" }] } },
};

export async function digestFile(file: File): Promise<string> {
  const call: Invocation = client.invoke({
    ...demo,
    method: "digest",
    methodParameters: { kind: "record", value: { fields: [inputStream.bytes(file)] } },
  });
  const result = await call.result;
  await call.finished;
  return JSON.stringify(result);
}

export function uploadStream(body: ReadableStream<Uint8Array>, blobs: Blob[]): Invocation {
  return client.invoke({
    ...demo,
    method: "split",
    methodParameters: { kind: "record", value: { fields: [inputStream.bytes(body), inputStream.binary(blobs)] } },
  });
}

async function* lines(): AsyncIterable<string> {
  yield "one";
  yield "two";
}

export async function reverse(onItem: (item: OutputChunk) => void): Promise<void> {
  const call = client.invoke({
    ...demo,
    method: "reverse",
    methodParameters: { kind: "record", value: { fields: [inputStream.strings(lines())] } },
  });
  call.on("reconnecting", (event) => console.log(event.failures, event.delayMs));
  const result = await call.result;
  const stream = result.kind === "value" ? result.streams[0] : undefined;
  if (stream === undefined) return;
  const reader = stream.readable().getReader();
  for (let read = await reader.read(); !read.done; read = await reader.read()) onItem(read.value);
  await call.finished;
}

export function resumeFrom(saved: string): Invocation {
  return client.resume(JSON.parse(saved) as ResumeState, { onCheckpoint: (state) => localStorage.setItem("ckpt", JSON.stringify(state)) });
}

export function explain(error: unknown): string {
  return error instanceof ClientError ? `${error.kind}: ${error.message}` : String(error);
}
