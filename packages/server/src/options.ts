/**
 * Server options, each limit with its default written down (decisions-v1
 * section 6). A deployment may lower a limit, never raise it above the
 * protocol's value: `resolveLimits` clamps.
 */
import type { IncomingMessage } from "node:http";
import { LIMITS, MAX_BINARY_MESSAGE_BYTES } from "@golem-stream/wire";
import { MAX_CALLER_IDENTITY_BYTES } from "./admission/token-budget.js";

/** Who is calling, as established by the authenticator. */
export interface Principal {
  /** The account sessions belong to; bound into every token. */
  readonly account: string;
  /** The effective principal; bound into every token. */
  readonly principal: string;
  /**
   * Earlier names of the same principal (of the same account), when the
   * authenticator renamed it: a session started under one of them stays
   * resumable by this caller, under that name (its tokens keep it). New
   * sessions take `principal`. At most a few; each is tried in turn.
   */
  readonly formerPrincipals?: readonly string[];
  /**
   * Earlier accounts of the same caller, when the authenticator moved it to
   * another account: a session started under one of them (with `principal`
   * or one of `formerPrincipals`) stays resumable by this caller, under that
   * account (its tokens keep it). New sessions, and the idempotency keys
   * they bind, take `account`. At most a few; each is tried in turn.
   */
  readonly formerAccounts?: readonly string[];
}

/**
 * Checks the bearer token of an HTTP request (before any upgrade). Returns
 * the principal, or undefined for `unauthenticated`. Must not throw for a bad
 * token; a thrown error is answered as `internal-error`.
 */
export type Authenticator = (bearerToken: string, request: IncomingMessage) => Principal | undefined | Promise<Principal | undefined>;

export type AuthorizedOperation = "start" | "resume" | "takeover" | "discover";

export interface AuthorizationRequest {
  readonly caller: Principal;
  readonly operation: AuthorizedOperation;
  readonly application: string;
  readonly environment: string;
  /** Absent only for `discover`. */
  readonly agentType?: string;
  /**
   * Lower-case hex SHA-256 of the canonical constructor parameters and phantom id.
   * Absent for `discover`, and for a `start` whose agent type does not exist or whose
   * constructor parameters do not validate: the authorizer is asked before that is told,
   * so a refused caller cannot probe the catalogue.
   */
  readonly agentIdentity?: string;
  readonly method?: string;
}

/** Returns true when the caller may perform the operation; false is `forbidden`. */
export type Authorizer = (request: AuthorizationRequest) => boolean | Promise<boolean>;

export interface Logger {
  /** Optional: lines an operator rarely needs (an attachment's end). */
  debug?(message: string, fields?: Readonly<Record<string, unknown>>): void;
  info(message: string, fields?: Readonly<Record<string, unknown>>): void;
  warn(message: string, fields?: Readonly<Record<string, unknown>>): void;
  error(message: string, fields?: Readonly<Record<string, unknown>>): void;
}

export const silentLogger: Logger = { info() {}, warn() {}, error() {} };

export interface ServerLimits {
  /** Largest text message (default 8 MiB). */
  readonly maxTextMessageBytes: number;
  /** Largest binary message including its prefix and metadata (default 16 MiB + 64 KiB + 4). */
  readonly maxBinaryMessageBytes: number;
  /** Queued entries per stream before the session is backpressured (default 256). */
  readonly maxQueuedEntriesPerStream: number;
  /** Byte permits per session (default 64 MiB). */
  readonly maxQueuedBytesPerSession: number;
  /**
   * Bytes all sessions and connections of this server may hold in memory
   * together: received messages not yet decoded plus what every session's
   * byte permits hold. While it is spent no connection's socket is read
   * (backpressure, never an error). Default 256 MiB: four sessions' budgets.
   */
  readonly maxQueuedBytesPerNode: number;
  /** Streams per session over its life (default 4096). */
  readonly maxStreamsPerSession: number;
  /** How long a finished session stays resumable (default 24 h). */
  readonly sessionRetentionMs: number;
  /**
   * How long a running session may go without any attachment before the
   * server gives it up: its open streams are cancelled with
   * `transport-detached`, durably (protocol 6.7), so an invocation nobody
   * will come back to ends instead of running until a restart. Any attach
   * (resume, takeover) before then starts the wait over. Default 24 h;
   * above 2^31-1 ms (about 24.8 days) never. In a cluster the owner decides,
   * and the node serving an attachment tells it the attachment is alive
   * (docs/cluster.md): use the same value on every node.
   */
  readonly detachedSessionTimeoutMs: number;
  /**
   * How long a purged session's tombstone (its attempt ids and idempotency
   * key) is kept after the purge, so that a late exact replay of its start
   * is answered `session-expired` instead of running the method again
   * (default 30 days).
   */
  readonly tombstoneRetentionMs: number;
  /** Bytes buffered in a socket before senders wait for it to drain (default 1 MiB). */
  readonly sendHighWaterBytes: number;
  /**
   * Memory the server keeps between sends for the envelopes of large binary
   * output messages (64 KiB and more), shared by all connections: an envelope's
   * buffer is reused once its frame was written instead of allocated anew
   * (default 8 MiB; 1 keeps none).
   */
  readonly maxPooledSendBytes: number;
  /**
   * Bytes of messages that session sockets are still receiving (a frame not
   * yet whole, the fragments of a message), all sockets together, each frame
   * counted at the length its header announces (default 256 MiB, at least
   * twice the largest message). Past it, the socket receiving the most is
   * closed with 1013 (try again later); its client resumes. The node's budget
   * (`maxQueuedBytesPerNode`) counts a message only once it is whole
   * (transport/receiving-bytes.ts).
   */
  readonly maxReceivingBytesPerNode: number;
  /** Received messages held before the socket stops being read (default 16). */
  readonly maxPendingInboundMessages: number;
  /**
   * Bytes of messages one connection reads in one turn of the event loop
   * before it stops reading until the next turn (default 256 KiB; the chunk
   * being parsed is finished first). libuv otherwise reads a busy socket up to
   * 2 MiB per turn: with small items that was tens of milliseconds in which no
   * other connection was read and no completed sync was acknowledged.
   */
  readonly maxReadBytesPerTurn: number;
  /**
   * Open authenticated session WebSockets; further upgrades are refused with
   * `overloaded` (HTTP 503, default 10 000). A connection refused by a close
   * (the browser extension's refusal) never counts: it is dropped at most a
   * second after its close frame, answered or not.
   */
  readonly maxConnections: number;
  /**
   * Failed authentications one client address may have within
   * `authFailureWindowMs` (default 20; 0: no throttle); its further requests
   * (upgrades and catalogue requests) are refused with `overloaded` (HTTP 503)
   * before the authenticator runs, until the window ends. IPv6 addresses
   * count per /64. Behind a reverse proxy every client has the proxy's
   * address: set 0 there and throttle at the proxy (transport/auth-throttle.ts).
   */
  readonly authFailuresPerAddress: number;
  /** The window of `authFailuresPerAddress`, from an address's first failure (default 60 000 ms). */
  readonly authFailureWindowMs: number;
  /**
   * Addresses the failure table remembers (default 10 000). When it is full,
   * the least recently failed address below its allowance is forgotten first;
   * a throttled one only when all are throttled.
   */
  readonly maxAuthFailureAddresses: number;
  /**
   * How long a session socket may wait before its first message (a start or
   * a resume); then it is closed with 1002 (default 30 000 ms).
   */
  readonly firstMessageTimeoutMs: number;
  /**
   * How long a client may take to send a whole HTTP request (its head, and
   * any body) to the listener `listen` opens; then 408 and the connection
   * closes (default 30 000 ms). Bounds how long a slow or silent client
   * holds a connection before it is a session socket. A server handed to
   * `attach` keeps its own timeouts.
   */
  readonly httpRequestTimeoutMs: number;
  /**
   * Connections the listener `listen` opens may hold that are not session
   * sockets: requests being read or answered, idle keep-alive connections,
   * upgrades waiting for their authentication (default 1024). One more is
   * answered `overloaded` (HTTP 503) and closed, but for a `/healthz` or
   * `/metrics` request sent within a second, answered before the connection
   * closes (a busy server is alive). Each such
   * connection is bounded in time, this bounds how many a client opening
   * them faster than they time out can hold. Session sockets count in
   * `maxConnections` instead. A server handed to `attach` is its owner's to
   * bound (Node's `server.maxConnections`).
   */
  readonly maxHttpConnections: number;
  /**
   * How often the server pings each session socket; a peer that answers
   * neither of two pings in a row is dropped (its attachment detaches and the
   * detached timeout starts). Not counted while either side is backpressured
   * (transport/liveness.ts). Default 30 000 ms; 0: no pings (a proxy in
   * front keeps connections alive its own way, or a test moves time itself).
   */
  readonly pingIntervalMs: number;
  /** Idle time before the kernel's TCP keepalive probes on an accepted session socket (default 30 000 ms). */
  readonly tcpKeepAliveDelayMs: number;
  /**
   * Open session sockets one principal (account and principal together) may
   * have; a further upgrade is refused with `overloaded` (HTTP 503) until one
   * closes (default 1000).
   */
  readonly maxConnectionsPerPrincipal: number;
  /**
   * Invocations one principal may run in this process at once; a further
   * start is answered `invocationRejected` `overloaded` (retryable) until one
   * finishes (default 500). Resumes, takeovers and exact replays of running
   * invocations are never refused by it. A re-run after owner loss holds a
   * slot while it runs, counted even past the bound and never refused
   * (docs/protocol/server.md). In a cluster, each node counts its own.
   */
  readonly maxRunningSessionsPerPrincipal: number;
  /**
   * Bytes one principal may keep in the store: its sessions' input chunks
   * and output items, and their own records and attempts (store/record-bytes.ts),
   * until their retention ends (default 16 GiB). A start, resume or takeover
   * whose record would go past it is answered `invocationRejected`
   * `limit-exceeded` (not retryable); an input or output item or a result
   * that would go past it is never stored, and the invocation it belongs to
   * fails with `limit-exceeded`. Other principals' work is
   * never touched. Counted from the store's own sums at start, then by what
   * the server writes and what each retention sweep purges; in a cluster
   * each node counts the store's sums again after each sweep, so a
   * principal writing through several nodes may go past it by what the
   * others wrote since the last sweep (docs/protocol/server.md).
   */
  readonly maxStoredBytesPerPrincipal: number;
  /**
   * UTF-8 bytes of the authenticator's `account` and `principal` together
   * (default 2048, at most 4243). Both are bound into every token, and a token
   * has at most 8192 characters, which also hold the issuer, audience, the
   * selector's names (128 bytes each at most) and an idempotency key of up to
   * 1 KiB: a longer identity is refused at authentication with `forbidden`
   * (403) instead of failing its first token. The issuer and audience get
   * what is left (4275 bytes less this limit, checked by `createSessionServer`);
   * the ceiling leaves exactly the defaults' 32. The sum: admission/token-budget.ts.
   */
  readonly maxCallerIdentityBytes: number;
  /**
   * Re-runs in a row of one replayable invocation that find no progress
   * since the re-run before (no more committed output items, stream ends,
   * input or journal entries; docs/durable-execution.md): after this many, an
   * invocation found interrupted again fails as any other does (default 3;
   * 0: never re-run). Bounds a method that crashes its server at the same
   * place each time it runs, not one moved on by node losses while it works.
   */
  readonly maxReplays: number;
}

export const DEFAULT_LIMITS: ServerLimits = {
  maxTextMessageBytes: LIMITS.maxTextMessageBytes,
  maxBinaryMessageBytes: MAX_BINARY_MESSAGE_BYTES,
  maxQueuedEntriesPerStream: LIMITS.maxQueuedEntriesPerStream,
  maxQueuedBytesPerSession: LIMITS.maxQueuedBytesPerSession,
  maxQueuedBytesPerNode: 256 * 1024 * 1024,
  maxStreamsPerSession: LIMITS.maxStreamsPerSession,
  sessionRetentionMs: LIMITS.defaultSessionRetentionMs,
  detachedSessionTimeoutMs: 24 * 60 * 60 * 1000,
  tombstoneRetentionMs: 30 * 24 * 60 * 60 * 1000,
  sendHighWaterBytes: 1024 * 1024,
  maxPooledSendBytes: 8 * 1024 * 1024,
  maxPendingInboundMessages: 16,
  maxReceivingBytesPerNode: 256 * 1024 * 1024,
  maxReadBytesPerTurn: 256 * 1024,
  maxConnections: 10_000,
  authFailuresPerAddress: 20,
  authFailureWindowMs: 60_000,
  maxAuthFailureAddresses: 10_000,
  firstMessageTimeoutMs: 30_000,
  httpRequestTimeoutMs: 30_000,
  maxHttpConnections: 1024,
  pingIntervalMs: 30_000,
  tcpKeepAliveDelayMs: 30_000,
  maxConnectionsPerPrincipal: 1000,
  maxRunningSessionsPerPrincipal: 500,
  maxStoredBytesPerPrincipal: 16 * 1024 * 1024 * 1024,
  maxCallerIdentityBytes: 2048,
  maxReplays: 3,
};

const PROTOCOL_CEILINGS: Partial<Record<keyof ServerLimits, number>> = {
  maxTextMessageBytes: LIMITS.maxTextMessageBytes,
  maxBinaryMessageBytes: MAX_BINARY_MESSAGE_BYTES,
  maxQueuedEntriesPerStream: LIMITS.maxQueuedEntriesPerStream,
  maxQueuedBytesPerSession: LIMITS.maxQueuedBytesPerSession,
  maxStreamsPerSession: LIMITS.maxStreamsPerSession,
  // Not a protocol limit: what a session token leaves once every other field is at its largest
  // and the issuer and audience are the defaults (the sum is in admission/token-budget.ts).
  maxCallerIdentityBytes: MAX_CALLER_IDENTITY_BYTES,
};

/** Limits where 0 turns the bound off (every other limit is positive). */
const ZERO_MEANS_OFF: ReadonlySet<keyof ServerLimits> = new Set<keyof ServerLimits>([
  "authFailuresPerAddress",
  "pingIntervalMs",
  "maxReplays",
]);

/** Limits that are timer delays. */
const TIMER_LIMITS: readonly (keyof ServerLimits)[] = [
  "firstMessageTimeoutMs",
  "httpRequestTimeoutMs",
  "pingIntervalMs",
  "tcpKeepAliveDelayMs",
];
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Fills defaults and clamps every limit to the protocol's ceiling. */
export function resolveLimits(overrides: Partial<ServerLimits> = {}): ServerLimits {
  const resolved: Record<string, number> = { ...DEFAULT_LIMITS };
  for (const [name, value] of Object.entries(overrides)) {
    if (value === undefined) continue;
    if (!(name in DEFAULT_LIMITS)) throw new TypeError(`unknown limit ${JSON.stringify(name)}`);
    const least = ZERO_MEANS_OFF.has(name as keyof ServerLimits) ? 0 : 1;
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < least) {
      throw new TypeError(`limit ${name} must be a ${least === 0 ? "non-negative" : "positive"} safe integer`);
    }
    const ceiling = PROTOCOL_CEILINGS[name as keyof ServerLimits];
    resolved[name] = ceiling === undefined ? value : Math.min(value, ceiling);
  }
  // Node's timers fire at once for a delay above 2^31-1 ms: a bound that large would be no bound.
  for (const name of TIMER_LIMITS) {
    if (resolved[name]! > MAX_TIMER_MS) throw new TypeError(`limit ${name} must be at most ${MAX_TIMER_MS} ms`);
  }
  // A node budget below one session's would let a single session spend it and stop every
  // socket, its own included, in states its own budget allows (input it cannot consume yet).
  if (resolved.maxQueuedBytesPerNode! < resolved.maxQueuedBytesPerSession!) {
    throw new TypeError("limit maxQueuedBytesPerNode must be at least maxQueuedBytesPerSession");
  }
  // One socket receiving the largest message (and the start of the next one's frames) must never
  // be past it alone: it would be closed at every attempt, and its client could never send it.
  if (resolved.maxReceivingBytesPerNode! < 2 * Math.max(resolved.maxBinaryMessageBytes!, resolved.maxTextMessageBytes!)) {
    throw new TypeError(
      "limit maxReceivingBytesPerNode must be at least twice the largest message (maxBinaryMessageBytes, maxTextMessageBytes)",
    );
  }
  return resolved as unknown as ServerLimits;
}
