/**
 * Records for `SessionStore` tests: a session, a stream and a start attempt
 * with plausible values (fresh random ids each call), and UTF-8 bytes of a
 * string.
 */
import { randomUUID } from "node:crypto";
import type { AttemptRecord, NewStream, SessionRecord } from "../store/session-store.js";

export function session(overrides: Partial<SessionRecord> = {}): SessionRecord {
  return {
    sessionId: randomUUID(),
    account: "acme",
    principal: "alice",
    application: "demo",
    environment: "default",
    agentType: "echo",
    agentIdentity: "ab".repeat(32),
    method: "reverse",
    idempotencyKey: "key-1",
    selector: "{}",
    config: "[]",
    parameters: "{}",
    generation: 1n,
    sessionToken: "gai1_session",
    streamKeyId: "k1",
    state: "running",
    result: undefined,
    outcome: undefined,
    createdAt: 1000,
    finishedAt: undefined,
    ...overrides,
  };
}

export function stream(sessionId: string, direction: "input" | "output", overrides: Partial<NewStream> = {}): NewStream {
  return {
    streamId: randomUUID(),
    sessionId,
    direction,
    elementKind: "u8",
    elementGraph: '{"root":{"kind":"u8","value":{}}}',
    coordinate: "/methodParameters/value/fields/0",
    provisionalRef: direction === "input" ? randomUUID() : undefined,
    parent: { kind: "params" },
    token: `gai1_${randomUUID()}`,
    ...overrides,
  };
}

/** The attempt that starts `record` at generation 1, as `createSession` takes it: `store.createSession(s, streams, startAttempt(s))`. */
export function startAttempt(record: SessionRecord, overrides: Partial<AttemptRecord> = {}): AttemptRecord {
  return { attemptId: randomUUID(), operation: "start", descriptorDigest: "d", sessionId: record.sessionId, generation: 1n, ...overrides };
}

export const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);
