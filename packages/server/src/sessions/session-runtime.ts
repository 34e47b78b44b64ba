/**
 * The sessions folder holds `SessionRuntime`, the runtime's entry for every
 * first message. It applies what admission/ decides (tokens, per-principal
 * bounds), keeps the sessions loaded in memory, and runs the node's recovery
 * and drain; the first-message rules belong with admission/, and move there
 * once the cache and the node's lifecycle are split from them.
 *
 * The protocol's first-message rules (sections 5.1, 5.2, 9, 10): starting
 * an invocation, exact-attempt replay, resume and takeover. It owns the map
 * of sessions loaded in memory and hands each accepted transport an
 * `Attachment`. Nothing here touches a socket.
 */
import { randomUUID } from "node:crypto";
import {
  canonicalJson,
  ProtocolError,
  type ConfigEntry,
  type InvocationStart,
  type JsonValue,
  type ResumeAttach,
  type SchemaValueJson,
} from "@golem-stream/wire";
import { refreshedSessionFields, type VerifiedToken } from "@golem-stream/tokens";
import { durabilityOf, type AgentTypeDescriptor, type MethodDescriptor } from "../agent-host.js";
import { Attachment } from "../attachment/attachment.js";
import { LiveSession } from "../invocation/live-session.js";
import type { RuntimeDeps } from "./runtime-deps.js";
import { asSendable } from "../invocation/message-room.js";
import type { AuthorizationRequest, Authorizer, Principal } from "../options.js";
import type { AttemptRecord, SessionRecord } from "../store/session-store.js";
import { StreamState } from "../invocation/stream-state.js";
import { asInvalidToken, type CursorPosition } from "../admission/token-service.js";
import { PrincipalSlots, type PrincipalSlot } from "../admission/principal-slots.js";
import type { SessionTransport } from "../transport/transport.js";
import { identityOf, type AttachOperation } from "../observability/server-observer.js";
import { canonicalValue, catalogueGraph, decodeValue, digestOf, substituteStreamRefs } from "../values.js";

/** An attachment whose ownership is decided; `open` sends its acceptance. */
interface DecidedAttachment {
  readonly attachment: Attachment;
  open(): Promise<void>;
}

/** Everything about a start that does not depend on the store. */
interface ValidatedStart {
  readonly type: AgentTypeDescriptor;
  readonly method: MethodDescriptor;
  readonly agentIdentity: string;
  readonly constructorParameters: SchemaValueJson;
}

export class SessionRuntime {
  readonly deps: RuntimeDeps;
  readonly #authorize: Authorizer;
  readonly #live = new Map<string, LiveSession>();
  /** Loads in flight, so two attaches of one session share one `LiveSession`. */
  readonly #loading = new Map<string, Promise<LiveSession | undefined>>();
  /** Invocations this process runs, until they finish (a drain waits for them). */
  readonly #runs = new Set<Promise<void>>();
  /** Starts being decided or opened (see `start`). */
  readonly #starting = new Set<Promise<void>>();
  /** The tail of each session's queue of attach decisions (see `#exclusive`). */
  readonly #attachQueues = new Map<string, Promise<unknown>>();
  /** Invocations each principal runs in this process (`limits.maxRunningSessionsPerPrincipal`). */
  readonly #runningPerPrincipal: PrincipalSlots;

  constructor(deps: RuntimeDeps, authorizer: Authorizer) {
    this.deps = deps;
    this.#runningPerPrincipal = new PrincipalSlots(deps.limits.maxRunningSessionsPerPrincipal, "sessions", (limit) => deps.observer.principalLimitReached(limit));
    this.#authorize = authorizer;
  }

  get liveSessions(): number {
    return this.#live.size;
  }

  // ------------------------------------------------------------ start

  start(message: InvocationStart, caller: Principal, transport: SessionTransport): Promise<Attachment> {
    // A drain fails what this node owns: it first waits for starts in flight, whose sessions may
    // be committed (owned here) before they run.
    const starting = this.#start(message, caller, transport);
    const settled = starting.then(
      () => undefined,
      () => undefined,
    );
    this.#starting.add(settled);
    void settled.then(() => this.#starting.delete(settled));
    return starting;
  }

  async #start(message: InvocationStart, caller: Principal, transport: SessionTransport): Promise<Attachment> {
    const descriptorDigest = digestOf(startDescriptor(message));
    const existing = await this.deps.store.getAttempt(message.attemptId);
    if (existing !== undefined) {
      return this.#openDecided(this.#exclusive(existing.sessionId, () => this.#replay(existing, descriptorDigest, "start", caller, transport, new Map())));
    }
    const validated = await this.#validateStart(message, caller);
    // A caller that keeps as many bytes in the store as it may would be refused its first item.
    this.deps.storedBytes.checkRoom(caller);
    // A new invocation (an exact replay above runs nothing new): one of the caller's slots, held until it finishes.
    const slot = this.#runningPerPrincipal.acquire(caller);
    try {
      return await this.#create(message, caller, transport, validated, descriptorDigest, slot);
    } catch (error) {
      slot.release();
      throw error;
    }
  }

  /** A new session for a validated start; `slot` goes with its run, and is released on any other path. */
  async #create(
    message: InvocationStart,
    caller: Principal,
    transport: SessionTransport,
    validated: ValidatedStart,
    descriptorDigest: string,
    slot: PrincipalSlot,
  ): Promise<Attachment> {
    const graph = catalogueGraph(validated.method.parameters);
    const decoded = decodeValue(message.methodParameters as unknown as JsonValue, graph, "provisional", "methodParameters");

    const sessionId = randomUUID();
    const selector = message.selector;
    const streamKeyId = this.deps.tokens.activeKeyId;
    const sessionToken = this.deps.tokens.mintSession(caller, {
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
    const now = this.deps.now();
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
    const live = new LiveSession(this.deps, provisionalRecord, []);
    const pending = live.prepareStreams(decoded.streams, graph, "input", { kind: "params" }, "/methodParameters");
    const tokens = new Map(pending.map((p) => [p.state.provisionalRef ?? "", p.state.token]));
    const parameters = substituteStreamRefs(decoded.value as unknown as SchemaValueJson, tokens);
    const record: SessionRecord = { ...provisionalRecord, parameters: canonicalJson(parameters as unknown as JsonValue) };
    live.record = record;
    const attempt: AttemptRecord = { attemptId: message.attemptId, operation: "start", descriptorDigest, sessionId, generation: 1n };

    // Creation and ownership under the session's queue: an exact replay that
    // reads the committed attempt waits until this start holds the session.
    const attachment = await this.#exclusive(sessionId, async () => {
      const created = await this.deps.store.createSession(
        record,
        pending.map((p) => p.record),
        attempt,
      );
      if (created.kind !== "created") return created;
      this.deps.observer.sessionStarted(identityOf(record));
      live.adopt(pending);
      this.#live.set(sessionId, live);
      if (this.deps.cluster !== undefined) live.follow(this.deps.cluster);
      const accepted = this.#newAttachment(live, message.attemptId, 1n, transport, "start");
      live.attach(accepted);
      return accepted;
    });
    if (attachment instanceof Attachment) {
      // Acceptance (with the complete channel table) goes out before execution starts.
      await attachment.open({ cursors: new Map(), resolveProvisionalRefs: true }, message.idempotencyKey, true);
      this.deps.observer.invocationsRunning(1);
      const journaled = durabilityOf(validated.type, validated.method) === "replay";
      const run = live
        .run(validated.method, { constructorParameters: validated.constructorParameters, parameters, config: message.config }, { journaled })
        .finally(() => {
          slot.release();
          this.deps.observer.invocationsRunning(-1);
          this.#runs.delete(run);
          this.#evictIfIdle(live);
        });
      this.#runs.add(run);
      return attachment;
    }
    const created = attachment;
    slot.release();
    if (created.kind === "attempt-exists") {
      const raced = await this.deps.store.getAttempt(message.attemptId);
      if (raced === undefined) throw new ProtocolError("internal-error", "internal error");
      return this.#openDecided(this.#exclusive(raced.sessionId, () => this.#replay(raced, descriptorDigest, "start", caller, transport, new Map())));
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

  /**
   * Catalogue lookup, constructor validation, authorization, method lookup,
   * config validation, in that order: the authorizer sees the agent identity,
   * and a caller who may not invoke learns nothing about methods. When the
   * lookup or the constructor fails, the authorizer is asked first without an
   * identity, so a caller it refuses cannot tell a missing agent type, or its
   * constructor's schema, from a refusal.
   */
  async #validateStart(message: InvocationStart, caller: Principal): Promise<ValidatedStart> {
    const selector = message.selector;
    const request: AuthorizationRequest = {
      caller,
      operation: "start",
      application: selector.application,
      environment: selector.environment,
      agentType: selector.agentType,
      method: selector.method,
    };
    let type: AgentTypeDescriptor;
    let constructorParameters: SchemaValueJson;
    try {
      const found = this.deps.host.agentTypes(selector.application, selector.environment)?.find((t) => t.name === selector.agentType);
      if (found === undefined) throw new ProtocolError("not-found", "the application, environment or agent type does not exist");
      type = found;
      const constructor = decodeValue(
        selector.constructorParameters as unknown as JsonValue,
        catalogueGraph(type.constructorParameters),
        "forbidden",
        "selector.constructorParameters",
      );
      constructorParameters = JSON.parse(canonicalValue(constructor)) as SchemaValueJson;
    } catch (error) {
      await this.#authorizeOrThrow(request);
      throw error;
    }
    const agentIdentity = agentIdentityOf(constructorParameters, selector.phantomId);
    await this.#authorizeOrThrow({ ...request, agentIdentity });
    const method = type.methods.find((m) => m.name === selector.method);
    if (method === undefined) throw new ProtocolError("not-found", "the agent type has no such method");
    checkConfig(type, message.config);
    return { type, method, agentIdentity, constructorParameters };
  }

  async #authorizeOrThrow(request: AuthorizationRequest): Promise<void> {
    let allowed: boolean;
    try {
      allowed = await this.#authorize(request);
    } catch (error) {
      throw new ProtocolError("internal-error", "internal error", { cause: error });
    }
    if (allowed !== true) throw new ProtocolError("forbidden", "the caller may not perform this operation");
  }

  // ------------------------------------------------------------ resume and takeover

  async resume(message: ResumeAttach, caller: Principal, transport: SessionTransport): Promise<Attachment> {
    const descriptorDigest = digestOf(resumeDescriptor(message));
    let verified: VerifiedToken<"session">;
    try {
      ({ verified, caller } = this.#verifyUnderAnyName(message.sessionToken, caller));
    } catch (error) {
      throw asInvalidToken(error);
    }
    return this.#openDecided(
      this.#exclusive(verified.fields.sessionId, async () => {
        const existing = await this.deps.store.getAttempt(message.attemptId);
        const live = await this.#load(verified.fields.sessionId);
        if (live === undefined) throw new ProtocolError("session-expired", "the session is no longer retained");
        return this.#evictOnFailure(live, () => this.#resumeLoaded(live, message, caller, transport, verified, existing, descriptorDigest));
      }),
    );
  }

  /**
   * Verifies a session token as the caller's, under its account or one of
   * its `formerAccounts` and its principal or one of its `formerPrincipals`;
   * returns the caller under the names that matched, which then stand for
   * the caller in everything about this session.
   */
  #verifyUnderAnyName(token: string, caller: Principal): { verified: VerifiedToken<"session">; caller: Principal } {
    try {
      return { verified: this.deps.tokens.verifySession(token, caller), caller };
    } catch (error) {
      for (const former of formerNames(caller)) {
        try {
          return { verified: this.deps.tokens.verifySession(token, former), caller: former };
        } catch {
          // The next names, or the first error.
        }
      }
      throw error;
    }
  }

  /** Sends the acceptance of an attachment decided under `#exclusive`. */
  async #openDecided(decided: Promise<DecidedAttachment>): Promise<Attachment> {
    const { attachment, open } = await decided;
    await open();
    return attachment;
  }

  /**
   * Runs `work` after every earlier attach decision of the session has
   * settled. Which attachment owns a session, and which generation and token
   * it holds, is decided here one attempt at a time: without it an exact
   * replay could read the committed attempt while the attach that committed
   * it has not yet moved `live.record` to its generation, and answer with the
   * previous generation's token: the client's own attach would be revoked.
   * Only the decision is queued; sending the acceptance happens after it,
   * outside the queue, so a slow transport holds no other attempt back.
   */
  #exclusive<T>(sessionId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.#attachQueues.get(sessionId) ?? Promise.resolve();
    const result = previous.then(work, work);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.#attachQueues.set(sessionId, tail);
    void tail.then(() => {
      if (this.#attachQueues.get(sessionId) === tail) this.#attachQueues.delete(sessionId);
    });
    return result;
  }

  /** A session loaded only to answer a refused attempt does not stay in memory. */
  async #evictOnFailure<T>(live: LiveSession, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      this.#evictIfIdle(live);
      throw error;
    }
  }

  async #resumeLoaded(
    live: LiveSession,
    message: ResumeAttach,
    caller: Principal,
    transport: SessionTransport,
    verified: VerifiedToken<"session">,
    existing: AttemptRecord | undefined,
    descriptorDigest: string,
  ): Promise<DecidedAttachment> {
    const fields = verified.fields;
    const record = live.record;
    if (
      record.application !== fields.application ||
      record.environment !== fields.environment ||
      record.agentType !== fields.agentType ||
      record.agentIdentity !== fields.agentIdentity ||
      record.method !== fields.method ||
      record.idempotencyKey !== fields.idempotencyKey ||
      record.account !== caller.account ||
      record.principal !== caller.principal
    ) {
      throw new ProtocolError("invalid-token", "the token is not valid here");
    }
    const cursors = await this.#verifyCursors(message.outputCursors, caller, live);
    if (existing !== undefined) {
      return this.#replay(existing, descriptorDigest, message.operation, caller, transport, cursors);
    }
    this.#checkRetained(live);
    await this.#authorizeOrThrow({
      caller,
      operation: message.operation,
      application: record.application,
      environment: record.environment,
      agentType: record.agentType,
      agentIdentity: record.agentIdentity,
      method: record.method,
    });
    // In a cluster the same attempt may have been decided at another node meanwhile (an exact
    // replay racing the original): then it is that attempt's replay, not a superseded resume.
    const supersededUnlessDecided = async (): Promise<DecidedAttachment> => {
      const decided = await this.deps.store.getAttempt(message.attemptId);
      if (decided !== undefined) return this.#replay(decided, descriptorDigest, message.operation, caller, transport, cursors);
      throw new ProtocolError("superseded", "a newer attachment of this session exists; use takeover");
    };
    if (message.operation === "resume" && fields.generation !== record.generation) return supersededUnlessDecided();
    if (fields.generation > record.generation) throw new ProtocolError("invalid-token", "the token is not valid here");

    const generation = record.generation + 1n;
    const sessionToken = this.deps.tokens.mintSession(caller, {
      ...refreshedSessionFields(verified, { generation, issuedAt: BigInt(this.deps.now()) }),
      streamKeyId: record.streamKeyId,
    });
    const attempt: AttemptRecord = {
      attemptId: message.attemptId,
      operation: message.operation,
      descriptorDigest,
      sessionId: record.sessionId,
      generation,
    };
    const expected = message.operation === "resume" ? fields.generation : record.generation;
    const attached = await this.deps.store.attach(attempt, sessionToken, expected);
    if (attached.kind === "superseded") return supersededUnlessDecided();
    if (attached.kind === "attempt-exists") {
      const raced = await this.deps.store.getAttempt(message.attemptId);
      if (raced === undefined) throw new ProtocolError("internal-error", "internal error");
      return this.#replay(raced, descriptorDigest, message.operation, caller, transport, cursors);
    }
    live.record = { ...live.record, generation, sessionToken };
    const attachment = this.#newAttachment(live, message.attemptId, generation, transport, message.operation);
    live.attach(attachment);
    return { attachment, open: () => attachment.open({ cursors, resolveProvisionalRefs: false }, record.idempotencyKey, true) };
  }

  /**
   * Output cursors (section 9): each verified, of this session, naming an
   * output stream at an event the log holds, at most one per stream.
   */
  async #verifyCursors(tokens: readonly string[], caller: Principal, live: LiveSession): Promise<Map<string, CursorPosition>> {
    const cursors = new Map<string, CursorPosition>();
    for (const token of tokens) {
      let cursor: CursorPosition;
      try {
        cursor = this.deps.tokens.verifyCursor(token, caller, live.sessionId);
      } catch (error) {
        throw asInvalidToken(error);
      }
      const stream = live.stream(cursor.streamId);
      if (stream === undefined || stream.direction !== "output") throw new ProtocolError("invalid-token", "the token is not valid here");
      if (cursors.has(cursor.streamId)) {
        throw new ProtocolError("invalid-message", "outputCursors holds two cursors for one stream");
      }
      const [logged] = await this.deps.store.readOutput(cursor.streamId, cursor.position, 1);
      // Read as an attachment sends it: an unsendable legacy item is its stream's terminal (message-room.ts).
      const event =
        logged === undefined ? undefined : asSendable(logged, stream.elementKind, live.childrenOf(stream.streamId, logged.sequence).map((child) => child.token));
      if (event === undefined || event.sequence !== cursor.position || event.event !== cursor.event) {
        throw new ProtocolError("invalid-token", "the token is not valid here");
      }
      cursors.set(cursor.streamId, cursor);
    }
    return cursors;
  }

  // ------------------------------------------------------------ exact-attempt replay

  /**
   * Section 9: acceptance is replayable by exact attempt. The replay does not
   * create a generation; it takes the session over in memory if its
   * generation is still current, and otherwise reports the current token
   * and mappings, then revokes this transport.
   */
  async #replay(
    attempt: AttemptRecord,
    descriptorDigest: string,
    operation: AttemptRecord["operation"],
    caller: Principal,
    transport: SessionTransport,
    cursors: Map<string, CursorPosition>,
  ): Promise<DecidedAttachment> {
    if (attempt.descriptorDigest !== descriptorDigest || attempt.operation !== operation) {
      throw new ProtocolError("attempt-conflict", "the attempt id was already used with a different request");
    }
    const live = await this.#load(attempt.sessionId);
    if (live === undefined) throw new ProtocolError("session-expired", "the session is no longer retained");
    return this.#evictOnFailure(live, () => this.#replayLoaded(live, attempt, operation, caller, transport, cursors));
  }

  async #replayLoaded(
    live: LiveSession,
    attempt: AttemptRecord,
    operation: AttemptRecord["operation"],
    caller: Principal,
    transport: SessionTransport,
    cursors: Map<string, CursorPosition>,
  ): Promise<DecidedAttachment> {
    const record = live.record;
    caller = underRecordedName(caller, record);
    if (record.account !== caller.account || record.principal !== caller.principal) {
      throw new ProtocolError("forbidden", "the caller may not perform this operation");
    }
    this.#checkRetained(live);
    await this.#authorizeOrThrow({
      caller,
      operation,
      application: record.application,
      environment: record.environment,
      agentType: record.agentType,
      agentIdentity: record.agentIdentity,
      method: record.method,
    });
    const owner = attempt.generation === record.generation;
    const attachment = this.#newAttachment(live, attempt.attemptId, attempt.generation, transport, "replay");
    if (owner) {
      live.attach(attachment);
      // Other nodes revoke their transports of this generation (section 9: sole owner).
      await live.claimAttachment(attachment);
    }
    return { attachment, open: () => attachment.open({ cursors, resolveProvisionalRefs: operation === "start" }, record.idempotencyKey, owner) };
  }

  #checkRetained(live: LiveSession): void {
    const finishedAt = live.record.finishedAt;
    if (finishedAt !== undefined && finishedAt + this.deps.limits.sessionRetentionMs < this.deps.now()) {
      throw new ProtocolError("session-expired", "the session is no longer retained");
    }
  }

  // ------------------------------------------------------------ memory

  #newAttachment(live: LiveSession, attemptId: string, generation: bigint, transport: SessionTransport, operation: AttachOperation): Attachment {
    const observed = this.deps.observer.attached({ operation, session: identityOf(live.record), generation });
    return new Attachment(live, attemptId, generation, transport, () => this.#evictIfIdle(live), observed);
  }

  /** A finished session, or a mirror of one another node runs, leaves memory with its last attachment. */
  #evictIfIdle(live: LiveSession): void {
    if ((live.finished || live.role === "mirror") && live.attachment === undefined && this.#live.get(live.sessionId) === live) {
      this.#live.delete(live.sessionId);
      live.unfollow();
    }
  }

  /** The session in memory, loading it from the store if needed. */
  #load(sessionId: string): Promise<LiveSession | undefined> {
    const loaded = this.#live.get(sessionId);
    // In a cluster another node may have committed since: decide on what is committed.
    if (loaded !== undefined) return this.deps.cluster === undefined ? Promise.resolve(loaded) : loaded.syncFromStore().then(() => loaded);
    let loading = this.#loading.get(sessionId);
    if (loading === undefined) {
      loading = this.#loadFromStore(sessionId).finally(() => this.#loading.delete(sessionId));
      this.#loading.set(sessionId, loading);
    }
    return loading;
  }

  async #loadFromStore(sessionId: string): Promise<LiveSession | undefined> {
    const record = await this.deps.store.getSession(sessionId);
    if (record === undefined) return undefined;
    const streams = await this.deps.store.listStreams(sessionId);
    const live = new LiveSession(this.deps, record, streams.map((s) => new StreamState(s)));
    const cluster = this.deps.cluster;
    if (cluster === undefined) {
      // A running session that is not in memory was interrupted (this process
      // restarted): a replayable method runs again (docs/durable-execution.md), any other fails now.
      if (record.state === "running" && !(await this.#rerun(live))) await live.failInterrupted();
    } else {
      live.follow(cluster);
      // Running here under this node's id but not in memory: an earlier
      // process of this node ran it, or this node just claimed it from a node
      // whose lease lapsed: re-run when replayable, else fail. Owned by another node: serve it.
      if (record.state === "running") {
        const ownership = await cluster.ownership(sessionId);
        if (ownership?.nodeId === cluster.nodeId) {
          // Its writes (the re-run's journal too) carry the epoch this node holds: if another node claims it meanwhile, they are refused.
          live.ownerEpoch = ownership.epoch;
          if (!(await this.#rerun(live))) await live.failInterrupted();
        } else live.role = "mirror";
      }
      // Changes committed between the first read and the subscription.
      await live.syncFromStore();
    }
    this.#live.set(sessionId, live);
    return live;
  }

  /**
   * Runs an interrupted invocation again from the start (docs/durable-execution.md) when its
   * method is replayable here, the store keeps journals and it has re-runs left
   * (`limits.maxReplays`); resolves to whether it does. The method is the catalogue's of this
   * name; the parameters, constructor and configuration are the session's own.
   */
  async #rerun(live: LiveSession): Promise<boolean> {
    const record = live.record;
    const store = this.deps.store;
    const type = this.deps.host.agentTypes(record.application, record.environment)?.find((t) => t.name === record.agentType);
    const method = type?.methods.find((m) => m.name === record.method);
    if (type === undefined || method === undefined || durabilityOf(type, method) !== "replay") return false;
    if (store.recordRun === undefined || store.readJournal === undefined || store.appendJournal === undefined) return false;
    // Counted before it runs: a method that crashes its server every time still reaches the bound.
    let attempt: number;
    let journal: Awaited<ReturnType<typeof store.readJournal>>;
    try {
      attempt = await store.recordRun(record.sessionId, live.ownerEpoch);
      journal = await store.readJournal(record.sessionId);
    } catch (error) {
      // Finished meanwhile (another node), or a store that fails now: not re-run; failing it records what can be.
      this.deps.logger.warn("could not start re-running an interrupted invocation", { event: "invocation.replay-failed", session: record.sessionId, error: String(error) });
      return false;
    }
    if (attempt - 1 > this.deps.limits.maxReplays) {
      this.deps.logger.warn("an interrupted replayable invocation has no re-runs left: it fails", {
        event: "invocation.replays-exhausted",
        session: record.sessionId,
        maxReplays: this.deps.limits.maxReplays,
      });
      return false;
    }
    const selector = JSON.parse(record.selector) as { constructorParameters: SchemaValueJson };
    const input = {
      constructorParameters: selector.constructorParameters,
      parameters: JSON.parse(record.parameters) as SchemaValueJson,
      config: JSON.parse(record.config) as ConfigEntry[],
    };
    this.deps.observer.replayStarted(identityOf(record), attempt);
    this.deps.observer.invocationsRunning(1);
    const run = live.run(method, input, { journaled: true, rerun: { attempt, journal } }).finally(() => {
      this.deps.observer.invocationsRunning(-1);
      this.#runs.delete(run);
      this.#evictIfIdle(live);
    });
    this.#runs.add(run);
    return true;
  }

  /** Finishes every session a previous process left running (see docs/protocol/server.md). */
  async recoverInterrupted(): Promise<number> {
    const running = await this.deps.store.listRunningSessions();
    const cluster = this.deps.cluster;
    let recovered = 0;
    for (const record of running) {
      if (this.#live.has(record.sessionId)) continue;
      // In a cluster, other nodes' sessions are theirs (or, once their lease lapses, an orphan claim's).
      if (cluster !== undefined && (await cluster.ownerOf(record.sessionId)) !== cluster.nodeId) continue;
      const live = await this.#load(record.sessionId);
      if (live !== undefined) this.#evictIfIdle(live);
      recovered++;
    }
    return recovered;
  }

  /**
   * Cluster mode: claims the running sessions whose owner's lease lapsed
   * (docs/cluster.md) and treats them as a restart does: a replayable one
   * runs again here (docs/durable-execution.md), any other is finished, its
   * open streams terminated, `invocation-failed`. Clients attached at any
   * node follow through the change feed. Returns how many were claimed.
   */
  async claimOrphans(): Promise<number> {
    const cluster = this.deps.cluster;
    if (cluster === undefined) return 0;
    const claimed = await cluster.claimOrphans();
    for (const sessionId of claimed) {
      await this.#exclusive(sessionId, async () => {
        const live = this.#live.get(sessionId);
        if (live === undefined) {
          const loaded = await this.#load(sessionId);
          if (loaded !== undefined) this.#evictIfIdle(loaded);
          return;
        }
        // The epoch of this claim (or of a later one by this node); claimed from this node since: that node's to finish.
        const ownership = await cluster.ownership(sessionId);
        if (ownership?.nodeId !== cluster.nodeId) return;
        live.ownerEpoch = ownership.epoch;
        live.role = "owner";
        await live.syncFromStore();
        if (!live.finished && !(await this.#rerun(live))) await live.failInterrupted();
        this.#evictIfIdle(live);
      });
    }
    return claimed.length;
  }

  /**
   * Waits until every invocation this process runs has finished, or until
   * `deadline` (ms since the epoch, by `deps.now`); then fails those still
   * running as a restart would. Returns how many had to be failed.
   */
  async finishOwned(deadlineMs: number): Promise<number> {
    const remaining = Math.max(0, deadlineMs - this.deps.now());
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, remaining)));
    // Starts in flight first: a session committed here just before the drain would otherwise be
    // neither run to its end nor failed by this node (another node would claim it later).
    await Promise.all([...this.#starting]);
    await Promise.race([Promise.all([...this.#runs]), deadline]);
    clearTimeout(timer);
    // All at once: one after another, N invocations would keep the node N commits past its deadline.
    const running = [...this.#live.values()].filter((live) => live.role === "owner" && !live.finished);
    const outcomes = await Promise.all(
      running.map(async (live) => {
        await live.failNow();
        // A success whose finish was being committed at the deadline stays a success.
        return live.record.outcome !== undefined && (JSON.parse(live.record.outcome) as { kind: string }).kind === "failure";
      }),
    );
    return outcomes.filter(Boolean).length;
  }

  /** Stops every invocation without recording anything; the store stays consistent. */
  shutdown(): void {
    for (const live of this.#live.values()) {
      live.abortForShutdown();
      live.unfollow();
    }
    this.#live.clear();
  }
}

function startDescriptor(message: InvocationStart): JsonValue {
  return {
    attemptId: message.attemptId,
    config: message.config as unknown as JsonValue,
    idempotencyKey: message.idempotencyKey,
    methodParameters: message.methodParameters as unknown as JsonValue,
    selector: message.selector as unknown as JsonValue,
  };
}

function resumeDescriptor(message: ResumeAttach): JsonValue {
  return {
    attemptId: message.attemptId,
    operation: message.operation,
    // The cursor set is a set: order does not change the descriptor.
    outputCursors: [...message.outputCursors].sort(),
    sessionToken: message.sessionToken,
  };
}

/** Decisions section 4, field 20: SHA-256 of the canonical constructor parameters and phantom id. */
export function agentIdentityOf(constructorParameters: SchemaValueJson, phantomId: string | undefined): string {
  const identity: Record<string, JsonValue> = { constructorParameters: constructorParameters as unknown as JsonValue };
  if (phantomId !== undefined) identity["phantomId"] = phantomId;
  return digestOf(identity);
}

/** Configuration entries must be declared by the agent type and accepted by it; paths are unique. */
function checkConfig(type: AgentTypeDescriptor, config: readonly ConfigEntry[]): void {
  const seen = new Set<string>();
  config.forEach((entry, index) => {
    const key = JSON.stringify(entry.path);
    if (seen.has(key)) throw new ProtocolError("validation-error", `config[${index}] repeats a path`, { path: `config[${index}]` });
    seen.add(key);
    const declaration = type.config.find((d) => d.path.length === entry.path.length && d.path.every((s, i) => s === entry.path[i]));
    if (declaration === undefined) {
      throw new ProtocolError("validation-error", `config[${index}] is not a configuration entry of this agent type`, { path: `config[${index}]` });
    }
    if (declaration.accepts !== undefined && !declaration.accepts(entry.value)) {
      throw new ProtocolError("validation-error", `config[${index}] has a value this agent type does not accept`, { path: `config[${index}]` });
    }
  });
}

/** Every earlier pair of names of `caller` (account and principal), its current pair left out. */
function formerNames(caller: Principal): Principal[] {
  const names: Principal[] = [];
  for (const account of [caller.account, ...(caller.formerAccounts ?? [])]) {
    for (const principal of [caller.principal, ...(caller.formerPrincipals ?? [])]) {
      if (account !== caller.account || principal !== caller.principal) names.push({ account, principal });
    }
  }
  return names;
}

/** The caller under the session's recorded account and principal when those are among its names. */
function underRecordedName(caller: Principal, recorded: { readonly account: string; readonly principal: string }): Principal {
  if (caller.account === recorded.account && caller.principal === recorded.principal) return caller;
  const known = formerNames(caller).some((former) => former.account === recorded.account && former.principal === recorded.principal);
  return known ? { account: recorded.account, principal: recorded.principal } : caller;
}
