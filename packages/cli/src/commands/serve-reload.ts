/**
 * `serve` on SIGUSR2: the certificate and key (`--tls-cert`, `--tls-key`),
 * the static tokens (`--token-file`, with `--token` and
 * `$GOLEM_STREAM_TOKEN`, as a restart would gather them) and the keyring
 * (`--keyring`, or the data directory's; serve-keyring-reload.ts) are read
 * again and replace those in use, all or nothing: new connections get the
 * new certificate, new handshakes the new tokens and new tokens the new
 * signing key, while connections already open keep theirs. A file that
 * cannot be used changes nothing and is logged, saying what was wrong; the
 * server serves on. So does a token file left without a token
 * (`reloadedTokens`).
 *
 * SIGUSR2 because SIGHUP, the usual "reload", stays a stop: it is also what a
 * closed terminal or a dropped ssh connection sends, and a server started
 * there must not outlive it reloading; Node keeps SIGUSR1 for its
 * inspector. The signal reaches here through `CliIo.reload` (bin.ts), so
 * that nothing but `serve` changes what SIGUSR2 does.
 */
import { resolve } from "node:path";
import type { EmbeddedServer } from "@golem-stream/server";
import type { Keyring } from "@golem-stream/tokens";
import { resolveServeTokens, staticTokens, type ServeTokens, type TokenSources } from "../bearer-tokens.js";
import type { CliIo } from "../io/cli-io.js";
import type { CliLogger } from "../io/logger.js";
import { readServeTls, tlsSecretFiles, type TlsFiles } from "./serve-tls.js";
import { credentialWarnings } from "./serve-credential-warnings.js";
import { readReloadedKeyring, type KeyringReloadSource, type ReloadedKeyring } from "./serve-keyring-reload.js";
import { describeKeyRoles } from "../keyring-file.js";
import { usageError } from "../exit-codes.js";

/** What a reload reads: the same sources the start read. */
export interface ReloadSources {
  readonly tokens: TokenSources;
  readonly dataDir: string;
  /** Whether a token is generated when none is given (false with `--jwt-jwks`), as at start. */
  readonly generateToken: boolean;
  readonly tls: TlsFiles | undefined;
  /** The keyring file and the keyring read from it at start (then at each reload that applied one); undefined: not read again. */
  readonly keyring: KeyringReloadSource | undefined;
  /** `--strict-permissions`: a token file or key others may read fails the reload, as it fails a start. */
  readonly strictPermissions: boolean;
}

/**
 * Reload requests from the first moment of `serve`: one that arrives before
 * the server listens is carried out as soon as it does, as the files it
 * read at start may predate it.
 */
export class ServeReloads {
  readonly #io: CliIo;
  #pending = false;
  #target: { readonly server: EmbeddedServer; sources: ReloadSources; readonly logger: CliLogger } | undefined;
  /** The reload under way; a request meanwhile runs one more after it, reading the files as they are then. */
  #running: Promise<void> | undefined;
  #again = false;
  readonly #onRequest = (): void => this.#request();

  constructor(io: CliIo) {
    this.#io = io;
    io.reload?.addEventListener("reload", this.#onRequest);
  }

  /** The server listens: reloads apply to it from now on (and one requested before runs now). */
  start(server: EmbeddedServer, sources: ReloadSources, logger: CliLogger): void {
    this.#target = { server, sources, logger };
    if (this.#pending) this.#request();
  }

  /** No more reloads (the server stops); one under way is waited for. */
  async stop(): Promise<void> {
    this.#io.reload?.removeEventListener("reload", this.#onRequest);
    this.#target = undefined;
    await this.#running;
  }

  #request(): void {
    const target = this.#target;
    if (target === undefined) {
      this.#pending = true;
      return;
    }
    this.#pending = false;
    if (this.#running !== undefined) {
      this.#again = true;
      return;
    }
    this.#running = reload(target.server, target.sources, target.logger)
      .then((keyring) => {
        // The next reload compares its keyring with this one.
        const source = target.sources.keyring;
        if (keyring !== undefined && source !== undefined)
          target.sources = { ...target.sources, keyring: { path: source.path, inUse: keyring } };
      })
      .finally(() => {
        this.#running = undefined;
        if (this.#again) {
          this.#again = false;
          this.#request();
        }
      });
  }
}

/**
 * Reads everything first, then applies it: a failure anywhere leaves the certificate, the tokens
 * and the keyring as they were. Resolves to the keyring now in use when the reload applied.
 */
async function reload(server: EmbeddedServer, sources: ReloadSources, logger: CliLogger): Promise<Keyring | undefined> {
  try {
    const bearers = await reloadedTokens(sources);
    const tls = sources.tls === undefined ? undefined : await readServeTls(sources.tls);
    const keyring = sources.keyring === undefined ? undefined : await readReloadedKeyring(sources.keyring);
    const warnings = await reloadWarnings(sources, bearers.tokens);
    // The certificate first: the server checks it once more and may still refuse it, before anything else changed.
    if (tls !== undefined) server.server.setTlsCertificate(tls.credentials);
    server.setTokens(staticTokens(bearers));
    if (keyring !== undefined) server.server.rotateKeyring(keyring.keyring);
    // Before the line saying it is done: whoever waits for that line has them too.
    for (const warning of warnings) logger.warn(warning, { event: "credentials.weak" });
    if (keyring !== undefined && keyring.dropped.length > 0)
      logger.warn(droppedKeysText(keyring), { event: "keyring.dropped", keys: keyring.dropped });
    logger.info("reloaded: new connections get the certificate, tokens and keyring read now; open ones keep theirs", {
      event: "server.reloaded",
      tokens: bearers.tokens.length,
      ...(tls === undefined ? {} : { certificate: tls.description }),
      ...(keyring === undefined ? {} : { keyring: describeKeyRoles(keyring.keyring) }),
      ...(keyring === undefined || keyring.changes.length === 0 ? {} : { keyringChanges: keyring.changes }),
    });
    return keyring?.keyring;
  } catch (error) {
    logger.error("reload failed: the certificate, tokens and keyring in use are kept", {
      event: "server.reload-failed",
      error: error instanceof Error ? error.message : String(error),
    });
    return undefined;
  }
}

function droppedKeysText(keyring: ReloadedKeyring): string {
  const keys = keyring.dropped.join(", ");
  return `the keyring ${keyring.path} no longer holds ${keys}: tokens signed with ${keyring.dropped.length === 1 ? "it" : "them"} are refused from now on (invalid-token)`;
}

/**
 * The tokens a reload applies, gathered as at start but for one case: a
 * `--token-file` that now holds no token, with neither `--token` nor
 * `$GOLEM_STREAM_TOKEN` (nor `--jwt-jwks`) beside it, fails the reload
 * instead of falling back to the generated `<data-dir>/bearer-token` as a
 * start does. Whoever empties the token file means to take tokens away, not
 * to let a token they never handed out in (in a cluster, one node's own);
 * and a server that refuses every token is a stopped server.
 */
async function reloadedTokens(sources: ReloadSources): Promise<ServeTokens> {
  const file = sources.tokens.file;
  if (file === undefined) return resolveServeTokens(sources.tokens, sources.dataDir, sources.generateToken);
  const bearers = await resolveServeTokens(sources.tokens, sources.dataDir, false);
  if (bearers.tokens.length === 0 && sources.generateToken) {
    throw usageError(
      `--token-file ${file} holds no token, and neither --token nor $GOLEM_STREAM_TOKEN gives one: the tokens in use are kept (stop the server to refuse every client)`,
    );
  }
  return bearers;
}

/**
 * What the start's banner would warn of in the files read again: a short
 * token in the token file, a token file or key others may read (with
 * `--strict-permissions` the reload fails instead, as the start would). The
 * `--token` and `$GOLEM_STREAM_TOKEN` ones were judged at start and have
 * not changed.
 */
async function reloadWarnings(sources: ReloadSources, tokens: readonly string[]): Promise<string[]> {
  const { flags, env, file } = sources.tokens;
  const readable = await credentialWarnings({
    flagTokens: [],
    tokens: [],
    files: [
      ...(file === undefined ? [] : [{ path: resolve(file), what: "token file" }]),
      ...tlsSecretFiles(sources.tls),
      ...(sources.keyring === undefined ? [] : [{ path: sources.keyring.path, what: "keyring" }]),
    ],
    strictPermissions: false,
  });
  if (sources.strictPermissions && readable.length > 0) throw usageError(`${readable[0]} (--strict-permissions: nothing reloaded)`);
  const short = await credentialWarnings({
    flagTokens: [],
    tokens:
      file === undefined
        ? []
        : tokens.filter((token) => !flags.includes(token) && token !== env).map((token) => ({ token, source: `--token-file ${file}` })),
    files: [],
    strictPermissions: false,
  });
  return [...readable, ...short];
}
