/**
 * Per-principal bounds: one caller reaching `maxConnectionsPerPrincipal` or
 * `maxRunningSessionsPerPrincipal` is refused with `overloaded` (retryable;
 * HTTP 503 for an upgrade), counted in `principal_limit_refusals_total`,
 * while another caller works normally; a freed slot is usable again.
 */
import { afterEach, describe, expect, it } from "vitest";
import { SUBPROTOCOL } from "@golem-stream/wire";
import { demoStart, RawClient, v } from "./helpers.js";
import { rawUpgrade } from "./support/raw-upgrade.js";
import { ALICE, BOB, startMemoryServer, type MemoryServer } from "./support/memory-server.js";
import { sample } from "./support/operations.js";

let running: MemoryServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

const refusals = async (limit: string) =>
  sample(await running!.server.metrics!.metrics(), "golem_stream_principal_limit_refusals_total", { limit });

/** A `count` that runs until its output is cancelled. */
const longCount = () => demoStart("count", v.record(v.u32(1_000_000), v.u32(1000)));

describe("maxConnectionsPerPrincipal", () => {
  it("refuses one principal's further upgrade with 503 overloaded while another connects; a closed one frees its slot", async () => {
    running = await startMemoryServer({ metrics: true, limits: { maxConnectionsPerPrincipal: 2 } });
    const alice = [await RawClient.connect(running.url, ALICE), await RawClient.connect(running.url, ALICE)];
    const third = rawUpgrade(running.url, [SUBPROTOCOL], { Authorization: `Bearer ${ALICE}` });
    expect(await third.status).toMatch(/^HTTP\/1\.1 503 /);
    await third.ended;
    expect(await refusals("connections")).toBe(1);
    // Another principal is not affected: it connects and runs an invocation to its end.
    const bob = await RawClient.connect(running.url, BOB);
    bob.send(demoStart("count", v.record(v.u32(3), v.u32(0))));
    const { messages } = await bob.all();
    expect(messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
    // Alice's own sessions on her open connections are unaffected too.
    alice[0]!.send(demoStart("count", v.record(v.u32(2), v.u32(0))));
    expect((await alice[0]!.all()).messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
    // That connection closed at the invocation's end: its slot is free again.
    const again = await RawClient.connect(running.url, ALICE);
    again.socket.close();
    alice[1]!.socket.close();
  });
});

describe("maxRunningSessionsPerPrincipal", () => {
  it("refuses one principal's further start with overloaded (retryable) while another starts; a finished one frees its slot", async () => {
    running = await startMemoryServer({ metrics: true, limits: { maxRunningSessionsPerPrincipal: 1 } });
    const first = await RawClient.connect(running.url, ALICE);
    first.send(longCount());
    const result = await first.nextOf("invocationResult");

    const second = await RawClient.connect(running.url, ALICE);
    second.send(longCount());
    expect(await second.next()).toMatchObject({ type: "invocationRejected", code: "overloaded", retryable: true });
    expect(await refusals("sessions")).toBe(1);

    const bob = await RawClient.connect(running.url, BOB);
    bob.send(demoStart("count", v.record(v.u32(3), v.u32(0))));
    expect((await bob.all()).messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });

    // Alice's running invocation ends: her slot is free for a new start.
    first.send({ type: "streamCancel", channel: result.mappings[0]!.channel, reason: "consumer-drop" });
    expect((await first.all()).messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
    const third = await RawClient.connect(running.url, ALICE);
    third.send(demoStart("count", v.record(v.u32(1), v.u32(0))));
    expect((await third.all()).messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
  });
});
