/**
 * Records and directories for the `SessionStore` tests: a session and a
 * stream with plausible values, and temporary data directories removed
 * after each test.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import type { NewStream, SessionRecord } from "../../src/index.js";

const dirs: string[] = [];
export function sqliteDir(): string {
  const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-store-"));
  dirs.push(dataDir);
  return dataDir;
}

/** For `afterEach`: removes the directories `sqliteDir` made. */
export function removeStoreDirs(): void {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

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

export const bytes = (text: string) => new TextEncoder().encode(text);
