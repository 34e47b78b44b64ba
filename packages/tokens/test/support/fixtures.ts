/** Shared test inputs: the vector keyrings and typed fields of each kind. */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Keyring, type CursorTokenFields, type SessionTokenFields, type StreamTokenFields } from "../../src/index.js";

const FILE = fileURLToPath(new URL("../../../../fixtures/stream-session-v1/tokens.json", import.meta.url));

export const vectorFile = JSON.parse(readFileSync(FILE, "utf8")) as {
  keyrings: Record<"before" | "after" | "retired", unknown>;
  invalid: { reason: string }[];
};

export const keyringBefore = (): Keyring => Keyring.fromJSON(JSON.stringify(vectorFile.keyrings.before));
export const keyringAfter = (): Keyring => Keyring.fromJSON(JSON.stringify(vectorFile.keyrings.after));

export const SESSION_FIELDS: SessionTokenFields = {
  issuer: "golem-stream.example",
  audience: "golem-stream",
  account: "account-7",
  principal: "user:alice",
  issuedAt: 1796083200000n,
  sessionId: "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f",
  application: "demo",
  environment: "default",
  agentType: "echo",
  agentIdentity: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
  method: "reverse",
  generation: 1n,
  idempotencyKey: "upload-42",
  streamKeyId: "k-2025",
};

export const STREAM_FIELDS: StreamTokenFields = {
  issuer: "golem-stream.example",
  audience: "golem-stream",
  account: "account-7",
  principal: "user:alice",
  issuedAt: 1796083200000n,
  sessionId: "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f",
  streamId: "0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3",
  direction: "input",
  elementSchemaDigest: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
  coordinate: "params/value/fields/0",
};

export const CURSOR_FIELDS: CursorTokenFields = {
  issuer: "golem-stream.example",
  audience: "golem-stream",
  account: "account-7",
  principal: "user:alice",
  issuedAt: 1796083200000n,
  sessionId: "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f",
  streamId: "ffeeddcc-bbaa-4998-8877-665544332211",
  position: 0n,
  event: "item",
};
