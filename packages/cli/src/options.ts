/**
 * What each command of `golem-stream` takes, as types, and the defaults the
 * help prints: the layer every command imports, which imports no command
 * (the program that wires the commands imports both).
 */
import type { CheckpointBatching } from "./checkpoint/batching.js";
import type { JwtServeOptions } from "./jwt-flags.js";

export const DEFAULT_URL = "http://127.0.0.1:8080";
export const DEFAULT_PORT = 8080;
export const DEFAULT_HOST = "127.0.0.1";
/** Session retention after invocationFinished: the default of decisions §6 (the server's own default too). */
export const DEFAULT_RETENTION_MS = 24 * 3_600_000;
/** How long a running invocation may go without any client attached before it is given up (the server's own default). */
export const DEFAULT_DETACHED_TIMEOUT_MS = 24 * 3_600_000;
export const LOG_LEVELS = ["error", "warn", "info", "debug"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
/** `auto`: readable lines on a terminal, JSON lines otherwise. */
export const LOG_FORMATS = ["auto", "json", "pretty"] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];
/** store-postgres's `logCompression`: lz4 where the server has it (its default), or the server's own method. */
export const LOG_COMPRESSIONS = ["lz4", "server"] as const;
export type LogCompression = (typeof LOG_COMPRESSIONS)[number];

export const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;
export const DEFAULT_LEASE_TTL_MS = 10_000;

export interface ConnectionOptions {
  readonly url?: string;
  readonly token?: string;
}

/**
 * Default of `--max-catalogue-bytes`, the client's default `maxCatalogueBytes` too: about 35 000
 * agent types of one small method each. A server serves catalogues of any size, so it is a flag.
 */
export const DEFAULT_MAX_CATALOGUE_BYTES = 8 * 2 ** 20;
/**
 * The largest `--max-catalogue-bytes`, as the client's largest: the text is decoded into one
 * string, and V8's longest is just under 512 Mi UTF-16 units; a bound near that would fail as a
 * decoding error, not as itself.
 */
export const MAX_CATALOGUE_BYTES_OPTION = 256 * 2 ** 20;

/** What the commands that read the server's catalogue (`invoke`, `resume`, `types`, `codegen`) share. */
export interface CatalogueOptions extends ConnectionOptions {
  /** `--max-catalogue-bytes`: the largest catalogue (discovery response) read. */
  readonly maxCatalogueBytes: number;
}

export interface ServeOptions extends JwtServeOptions {
  readonly port: number;
  readonly host: string;
  readonly token: readonly string[];
  readonly tokenFile?: string;
  /** `--tls-cert`, `--tls-key`: serve HTTPS with this certificate (PEM, with its chain) and key. */
  readonly tlsCert?: string;
  readonly tlsKey?: string;
  /** `--tls-key-passphrase-file`: an encrypted key's passphrase, the file's first line. */
  readonly tlsKeyPassphraseFile?: string;
  readonly dataDir?: string;
  readonly logLevel: LogLevel;
  readonly logFormat: LogFormat;
  /** Serve Prometheus metrics at /metrics. */
  readonly metrics: boolean;
  /** Milliseconds a finished invocation stays resumable. */
  readonly retention: number;
  /** Milliseconds a running invocation may go without any client before it is given up. */
  readonly detachedTimeout: number;
  /** A cluster store URL (`postgres://...`); `$GOLEM_STREAM_STORE` when absent. Validated by `serve`, never echoed. */
  readonly store?: string;
  /** This node's id in the cluster (default: generated). */
  readonly nodeId?: string;
  /** Milliseconds a drain (SIGTERM with a cluster store) lets this node's invocations run. */
  readonly drainTimeout?: number;
  /** Milliseconds a node's lease lasts without a heartbeat. */
  readonly leaseTtl?: number;
  /** Milliseconds the store waits out an unavailable database (PostgreSQL) or transient errors (SQLite) before failing writes; absent: the store's default (30 s). */
  readonly storeOutageGrace?: number;
  /** The PostgreSQL store's connection time limits, ms (0: off); each absent one keeps the store's default. */
  readonly pgConnectTimeoutMs?: number;
  readonly pgStatementTimeoutMs?: number;
  readonly pgQueryTimeoutMs?: number;
  readonly pgKeepaliveInitialDelayMs?: number;
  /** How PostgreSQL compresses log rows too large for a page; absent keeps the store's default (lz4). */
  readonly logCompression?: LogCompression;
  /** The keyring file (default `<data-dir>/keyring.json`). */
  readonly keyring?: string;
  /** Origins whose pages may open sessions (the browser extension, docs/protocol/browser.md); none: off. */
  readonly allowOrigin: readonly string[];
  /** Serve the web console at `/` (`--no-console` turns it off). */
  readonly console: boolean;
  /** Failed authentications per client address per minute before it is refused (0: no throttle); absent: the server's default. */
  readonly authFailureLimit?: number;
  /** Milliseconds a session socket may wait before its first message; absent: the server's default. */
  readonly firstMessageTimeout?: number;
  /** Milliseconds a client may take to send a whole HTTP request; absent: the server's default. */
  readonly httpRequestTimeout?: number;
  /** Milliseconds between the server's pings; absent: the server's default. */
  readonly pingInterval?: number;
  /** Open session sockets of all callers together; absent: the server's default. */
  readonly maxConnections?: number;
  /** Connections to the listener that are not session sockets; absent: the server's default. */
  readonly maxHttpConnections?: number;
  /** Open session sockets per principal; absent: the server's default. */
  readonly maxConnectionsPerPrincipal?: number;
  /** Invocations one principal may run at once; absent: the server's default. */
  readonly maxSessionsPerPrincipal?: number;
  /** Payload bytes one principal may keep in the store; absent: the server's default. */
  readonly maxStoredBytesPerPrincipal?: number;
  /** DNS names the server is reached by, for the Host check of its HTTP endpoints and console. */
  readonly publicHost: readonly string[];
  /** Refuse to start when the keyring or a token file is readable by group or others. */
  readonly strictPermissions?: boolean;
  /** The ES module whose default export is the catalogue to serve (relative to the working directory); absent: the demo. */
  readonly agents?: string;
  /** Serve the demo catalogue beside `--agents` (it is served anyway without them). */
  readonly demo: boolean;
  /** Cluster mode: serve although live nodes serve another catalogue (a rolling upgrade). */
  readonly allowCatalogueDrift?: boolean;
}

/** `auto`: bare output for a single output stream, item lines otherwise; `lines`: always item lines; `json`: events. */
export type OutputFormat = "auto" | "lines" | "json";
/**
 * How `invoke` reads the lines of a stream parameter's input, `--output`'s counterpart: `auto`, a
 * `stream<string>` one raw line per item (as bare output prints it) and any other element type one
 * JSON value per line; `json`, every line JSON, so a string item can hold a newline (`"a\nb"`, as
 * `--output lines` prints it). Byte streams are raw either way.
 */
export type InputFormat = "auto" | "json";
/** Where the result goes when stdout carries bare output: stderr, or nowhere. */
export type ResultDestination = "stderr" | "none";

/** What `invoke` and `resume` share: output, progress, checkpoint writes, reconnects. */
export interface RunOptions extends CatalogueOptions {
  readonly output: OutputFormat;
  readonly result: ResultDestination;
  readonly progress: boolean;
  readonly checkpointBatching: CheckpointBatching;
  /** Reconnect attempts without progress before giving up (the client's `reconnect.maxAttempts`). */
  readonly retries: number;
  /** How long the server may take to complete a handshake, answer a start/resume/takeover, or the discovery request, ms. */
  readonly timeoutMs: number;
}

export const DEFAULT_RETRIES = 10;
/** The client's own acceptance timeout default (30 s); also bounds handshakes and discovery here. */
export const DEFAULT_TIMEOUT_MS = 30_000;

export interface InvokeOptions extends RunOptions {
  readonly application: string;
  readonly environment: string;
  /** `--constructor`; renamed because `constructor` is inherited by every object. */
  readonly constructorJson?: string;
  readonly native: boolean;
  readonly input: InputFormat;
  readonly idempotencyKey?: string;
  readonly phantomId?: string;
  readonly checkpoint?: string;
}

export type ResumeOptions = RunOptions;

export interface TypesOptions extends CatalogueOptions {
  readonly application: string;
  readonly environment: string;
  readonly json: boolean;
}

export interface CodegenOptions extends CatalogueOptions {
  readonly application: string;
  readonly environment: string;
  /** The file to write (replaced atomically); stdout when absent or `-`. */
  readonly out?: string;
  /** The module the generated source imports `defineAgentType` and `t` from. */
  readonly importFrom: string;
  /** `--timeout`: how long the discovery request may take, ms. */
  readonly timeout: number;
}
