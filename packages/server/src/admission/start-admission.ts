/**
 * `invocationStart` (sections 5.1, 10): a new invocation, or the exact
 * replay of a start the store already holds. A new one is validated
 * (start-rules.ts), takes one of its principal's running slots and room in
 * its stored bytes, is committed with its attempt under the session's
 * queue, and runs once its acceptance is sent.
 */
import { randomUUID } from "node:crypto";
import { canonicalJson, ProtocolError, type InvocationStart, type JsonValue, type SchemaValueJson } from "@golem-stream/wire";
import { durabilityOf } from "../agent-host.js";
import { Attachment } from "../attachment/attachment.js";
import { LiveSession } from "../invocation/live-session.js";
import type { RuntimeDeps } from "./runtime-deps.js";
import type { Authorizer, Principal } from "../options.js";
import type { AttemptRecord, SessionRecord } from "../store/session-store.js";
import { ATTEMPT_RECORD_BYTES, sessionRecordBytes } from "../store/record-bytes.js";
import type { SessionTransport } from "../transport/transport.js";
import { identityOf } from "../observability/server-observer.js";
import type { NodeLifecycle } from "../sessions/node-lifecycle.js";
import { catalogueGraph, decodeValue, substituteStreamRefs } from "../values.js";
import type { PrincipalSlot, PrincipalSlots } from "./principal-slots.js";
import { openDecided, type ExactReplay } from "./exact-replay.js";
import { RefusedStarts } from "./refused-starts.js";
import { startDescriptor, validateStart, type StartDescriptor, type ValidatedStart } from "./start-rules.js";

export class StartAdmission {
  readonly #deps: RuntimeDeps;
  readonly #node: NodeLifecycle;
  readonly #replay: ExactReplay;
  readonly #authorize: Authorizer;
  /** Invocations each principal runs in this process (`limits.maxRunningSessionsPerPrincipal`). */
  readonly #runningPerPrincipal: PrincipalSlots;
  /** Starts refused before acceptance: the same attempt gets the same answer (refused-starts.ts). */
  readonly #refused = new RefusedStarts();

  constructor(deps: RuntimeDeps, node: NodeLifecycle, replay: ExactReplay, authorize: Authorizer, runningPerPrincipal: PrincipalSlots) {
    this.#deps = deps;
    this.#node = node;
    this.#replay = replay;
    this.#authorize = authorize;
    this.#runningPerPrincipal = runningPerPrincipal;
  }

  start(message: InvocationStart, caller: Principal, transport: SessionTransport): Promise<Attachment> {
    const starting = this.#start(message, caller, transport);
    this.#node.runs.trackStart(starting);
    return starting;
  }

  async #start(message: InvocationStart, caller: Principal, transport: SessionTransport): Promise<Attachment> {
    const descriptor = startDescriptor(this.#deps.host, message);
    const descriptorDigest = descriptor.digest;
    const existing = await this.#deps.store.getAttempt(message.attemptId);
    if (existing !== undefined) return this.#replayStart(existing, descriptorDigest, caller, transport);
    this.#refused.check(message.attemptId, descriptorDigest, caller);
    let slot: PrincipalSlot;
    let validated: ValidatedStart;
    try {
      validated = await validateStart(this.#deps.host, this.#authorize, message, caller);
      // A caller that keeps as many bytes in the store as it may is refused before its session is made
      // (whose record the charge in #create counts).
      this.#deps.storedBytes.checkRoom(caller);
      // A new invocation (an exact replay above runs nothing new): one of the caller's slots, held until it finishes.
      slot = this.#runningPerPrincipal.acquire(caller);
    } catch (error) {
      this.#refused.remember(message.attemptId, descriptorDigest, caller, error);
      throw error;
    }
    try {
      return await this.#create(message, caller, transport, validated, descriptor, slot);
    } catch (error) {
      slot.release();
      // Refused before its acceptance (an idempotency conflict): an attempt committed since is found in the store first.
      this.#refused.remember(message.attemptId, descriptorDigest, caller, error);
      throw error;
    }
  }

  #replayStart(attempt: AttemptRecord, descriptorDigest: string, caller: Principal, transport: SessionTransport): Promise<Attachment> {
    const cache = this.#node.cache;
    return openDecided(
      cache.exclusive(attempt.sessionId, () => this.#replay.decide(attempt, descriptorDigest, "start", caller, transport, new Map())),
    );
  }

  /** A new session for a validated start; `slot` goes with its run, and is released on any other path. */
  async #create(
    message: InvocationStart,
    caller: Principal,
    transport: SessionTransport,
    validated: ValidatedStart,
    descriptor: StartDescriptor,
    slot: PrincipalSlot,
  ): Promise<Attachment> {
    const graph = catalogueGraph(validated.method.parameters);
    // Decoded once, for the descriptor, when that was under this method's graph (the catalogue unchanged since).
    const decoded =
      descriptor.parameters?.graph === graph
        ? descriptor.parameters.decoded
        : decodeValue(message.methodParameters as unknown as JsonValue, graph, "provisional", "methodParameters");
    const descriptorDigest = descriptor.digest;

    const sessionId = randomUUID();
    const selector = message.selector;
    const streamKeyId = this.#deps.tokens.activeKeyId;
    const sessionToken = this.#deps.tokens.mintSession(caller, {
      sessionId,
      application: selector.application,
      environment: selector.environment,
      agentType: selector.agentType,
      agentIdentity: validated.agentIdentity,
      method: selector.method,
      generation: 1n,
      idempotencyKey: message.idempotencyKey,
      streamKeyId,
    });
    const now = this.#deps.now();
    const provisionalRecord: SessionRecord = {
      sessionId,
      account: caller.account,
      principal: caller.principal,
      application: selector.application,
      environment: selector.environment,
      agentType: selector.agentType,
      agentIdentity: validated.agentIdentity,
      method: selector.method,
      idempotencyKey: message.idempotencyKey,
      selector: canonicalJson({ ...selector, constructorParameters: validated.constructorParameters } as unknown as JsonValue),
      config: canonicalJson(message.config as unknown as JsonValue),
      parameters: "",
      generation: 1n,
      sessionToken,
      streamKeyId,
      state: "running",
      result: undefined,
      outcome: undefined,
      createdAt: now,
      finishedAt: undefined,
    };
    const live = new LiveSession(this.#deps, provisionalRecord, []);
    const pending = live.prepareStreams(decoded.streams, graph, "input", { kind: "params" }, "/methodParameters");
    const tokens = new Map(pending.map((p) => [p.state.provisionalRef ?? "", p.state.token]));
    const parameters = substituteStreamRefs(decoded.value as unknown as SchemaValueJson, tokens);
    const record: SessionRecord = { ...provisionalRecord, parameters: canonicalJson(parameters as unknown as JsonValue) };
    live.record = record;
    const attempt: AttemptRecord = { attemptId: message.attemptId, operation: "start", descriptorDigest, sessionId, generation: 1n };
    // The session's record and its attempt count against the caller's stored bytes (store/record-bytes.ts).
    const recordBytes = sessionRecordBytes(record) + ATTEMPT_RECORD_BYTES;
    const refused = this.#deps.storedBytes.charge(caller, recordBytes);
    if (refused !== undefined) throw refused;

    // Creation and ownership under the session's queue: an exact replay that
    // reads the committed attempt waits until this start holds the session.
    const cache = this.#node.cache;
    const attachment = await cache.exclusive(sessionId, async () => {
      const created = await this.#deps.store.createSession(
        record,
        pending.map((p) => p.record),
        attempt,
      );
      if (created.kind !== "created") return created;
      this.#deps.observer.sessionStarted(identityOf(record));
      live.adopt(pending);
      cache.add(live);
      if (this.#deps.cluster !== undefined) live.follow(this.#deps.cluster);
      const accepted = cache.newAttachment(live, message.attemptId, 1n, transport, "start");
      live.attach(accepted);
      return accepted;
    });
    if (attachment instanceof Attachment) {
      // Acceptance (with the complete channel table) goes out before execution starts.
      await attachment.open({ cursors: new Map(), resolveProvisionalRefs: true }, message.idempotencyKey, true);
      const journaled = durabilityOf(validated.type, validated.method) === "replay";
      const input = { constructorParameters: validated.constructorParameters, parameters, config: message.config };
      this.#node.runs.launch(live, () => live.run(validated.method, input, { journaled }), slot);
      return attachment;
    }
    const created = attachment;
    slot.release();
    this.#deps.storedBytes.refund(caller, recordBytes);
    if (created.kind === "attempt-exists") {
      const raced = await this.#deps.store.getAttempt(message.attemptId);
      if (raced === undefined) throw new ProtocolError("internal-error", "internal error");
      return this.#replayStart(raced, descriptorDigest, caller, transport);
    }
    if (created.kind === "purged") {
      // A late replay of a start (or a new start with the key) of a session
      // the retention sweep purged: it must not run the method again.
      throw new ProtocolError("session-expired", "the session is no longer retained");
    }
    throw new ProtocolError(
      "idempotency-conflict",
      "the idempotency key is already bound to an invocation of this agent; a new start with it is refused even when identical (the key makes a start happen once): continue that invocation from its saved state with a takeover (client.takeover, golem-stream resume), or use another key",
    );
  }
}
