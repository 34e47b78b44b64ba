/**
 * The real session server on loopback hosting a `probe` agent type for what
 * the demo catalogue cannot show: a `stream<binary>` input (the
 * demo has none) and an agent that stops reading its input early, so the
 * server cancels that input towards the client (`consumer-drop`).
 *
 * Built only from the server package's public API (`createSessionServer`,
 * `StaticAgentHost`), exactly as a user would host their own agents.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { JsonObject, SchemaValueJson } from "@golem-stream/wire";
import {
  MemorySessionStore,
  StaticAgentHost,
  createSessionServer,
  loadOrCreateKeyring,
  recordField,
  type AgentTypeDefinition,
  type PartialObserver,
} from "@golem-stream/server";
import { TOKEN } from "./embedded.js";

const str: JsonObject = { kind: "string", value: {} };
const u32: JsonObject = { kind: "u32", value: {} };
const u64: JsonObject = { kind: "u64", value: {} };
const u8: JsonObject = { kind: "u8", value: {} };
const binary: JsonObject = { kind: "binary", value: { restrictions: {} } };
const stream = (inner: JsonObject): JsonObject => ({ kind: "stream", value: { inner } });
const recordType = (...fields: [string, JsonObject][]): JsonObject => ({
  kind: "record",
  value: { fields: fields.map(([name, body]) => ({ name, body })) },
});
const value = (kind: string, v: string | number): SchemaValueJson => ({ kind, value: v }) as SchemaValueJson;
const record = (...fields: SchemaValueJson[]): SchemaValueJson => ({ kind: "record", value: { fields } }) as unknown as SchemaValueJson;

/**
 * SHA-256 over each item as `u64 length (big endian) || mimeType length || mimeType || bytes`,
 * so item boundaries and MIME types count, not only the concatenated bytes.
 */
export function blobsDigest(items: readonly { bytes: Uint8Array; mimeType?: string | undefined }[]): string {
  const hash = createHash("sha256");
  for (const item of items) addBlob(hash, item.bytes, item.mimeType);
  return hash.digest("hex");
}

function addBlob(hash: ReturnType<typeof createHash>, bytes: Uint8Array, mimeType: string | undefined): void {
  const header = Buffer.alloc(12);
  header.writeBigUInt64BE(BigInt(bytes.byteLength), 0);
  const mime = Buffer.from(mimeType ?? "", "utf8");
  header.writeUInt32BE(mime.byteLength, 8);
  hash.update(header).update(mime).update(bytes);
}

/** Byte `i` of a `pattern` stream: position-dependent, so a replay from the wrong offset shows. */
export const patternByte = (i: number): number => (i * 31 + (i >>> 8) * 7 + (i >>> 16)) & 0xff;

export function patternBytes(from: number, length: number): Uint8Array {
  const out = new Uint8Array(length);
  for (let j = 0; j < length; j++) out[j] = patternByte(from + j);
  return out;
}

export const PROBE = {
  application: "probe",
  environment: "default",
  agentType: "probe",
  constructorParameters: record(),
};

const PROBE_AGENT_TYPE: AgentTypeDefinition = {
  name: "probe",
  constructorParameters: { root: recordType() },
  config: [],
  methods: [
    // items, total payload bytes, and blobsDigest() of what arrived.
    {
      name: "blobDigest",
      parameters: { root: recordType(["data", stream(binary)]) },
      result: { root: recordType(["items", u64], ["bytes", u64], ["sha256", str]) },
    },
    // Reads `bytes` bytes of the input, then stops reading it (the server cancels it: consumer-drop).
    {
      name: "head",
      parameters: { root: recordType(["data", stream(u8)], ["bytes", u32]) },
      result: { root: recordType(["bytes", u64], ["sha256", str]) },
    },
    // Takes one input chunk a second (a consumer far slower than any client); the bytes it took.
    { name: "trickle", parameters: { root: recordType(["data", stream(u8)]) }, result: { root: u64 } },
    // A stream<u8> of `chunks` writes of `size` bytes each: byte i of the stream is patternByte(i).
    { name: "pattern", parameters: { root: recordType(["chunks", u32], ["size", u32]) }, result: { root: stream(u8) } },
  ],
  implementations: {
    async blobDigest(ctx) {
      const hash = createHash("sha256");
      let items = 0n;
      let bytes = 0n;
      for await (const item of ctx.inputBlobs(recordField(ctx.parameters, 0))) {
        addBlob(hash, item.bytes, item.mimeType);
        items++;
        bytes += BigInt(item.bytes.byteLength);
      }
      return record(value("u64", items.toString()), value("u64", bytes.toString()), value("string", hash.digest("hex")));
    },
    async head(ctx) {
      const limit = (recordField(ctx.parameters, 1) as { value: number }).value;
      const hash = createHash("sha256");
      let taken = 0;
      for await (const chunk of ctx.inputBytes(recordField(ctx.parameters, 0))) {
        const part = chunk.subarray(0, limit - taken);
        hash.update(part);
        taken += part.byteLength;
        if (taken >= limit) break; // stop reading: the rest of the input is not wanted
      }
      return record(value("u64", String(taken)), value("string", hash.digest("hex")));
    },
    async trickle(ctx) {
      let bytes = 0;
      for await (const chunk of ctx.inputBytes(recordField(ctx.parameters, 0))) {
        bytes += chunk.byteLength;
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
      return value("u64", String(bytes));
    },
    async pattern(ctx) {
      const chunks = (recordField(ctx.parameters, 0) as { value: number }).value;
      const size = (recordField(ctx.parameters, 1) as { value: number }).value;
      return ctx.output(async (writer) => {
        for (let c = 0; c < chunks; c++) await writer.write(patternBytes(c * size, size));
      });
    },
  },
};

export interface ProbeServer {
  readonly url: string;
  close(): Promise<void>;
}

/** A server hosting only the probe agent (application `probe`); its store is in memory. `observers` see what it reports. */
export async function startProbeServer(observers: readonly PartialObserver[] = []): Promise<ProbeServer> {
  const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-probe-"));
  const server = createSessionServer({
    store: new MemorySessionStore(),
    host: new StaticAgentHost({ probe: { default: [PROBE_AGENT_TYPE] } }),
    keyring: loadOrCreateKeyring(dataDir),
    authenticator: (bearer) => (bearer === TOKEN ? { account: "local", principal: "probe-tests" } : undefined),
    observers,
  });
  const address = await server.listen(0, "127.0.0.1");
  return {
    url: address.url,
    async close() {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
