/**
 * A TLS failure as Node reports it, read out of an error: its code as Node
 * names such codes, its text, and (for a certificate not for the host asked
 * for) the names the certificate carries. For the transports' and the CLI's
 * messages about TLS, each of which says in its own words what to do.
 *
 * Pure: it reads the error's `code`, `message`, `cause` and `cert` members,
 * and imports nothing of Node's.
 */

/** A TLS error found in an error's cause chain. */
export interface TlsError {
  /** Node's code; `EPROTO` with OpenSSL's reason is named as Node names it elsewhere (`ERR_SSL_WRONG_VERSION_NUMBER`). */
  readonly code: string;
  /** OpenSSL's reason when Node's text is OpenSSL's, else the first line of Node's text, with the certificate's names when it lacks them; may be empty. */
  readonly text: string;
  /** The error in the chain that carries it. */
  readonly error: object;
}

/** How deep the cause chain is followed: the global `fetch` hides Node's error one level down. */
const MAX_CAUSE_DEPTH = 4;

/**
 * The first error in `error`'s cause chain (itself included) whose code
 * `known` accepts, as a `TlsError`; undefined when there is none.
 */
export function tlsErrorOf(error: unknown, known: (code: string) => boolean): TlsError | undefined {
  for (
    let at: unknown = error, depth = 0;
    typeof at === "object" && at !== null && depth < MAX_CAUSE_DEPTH;
    at = (at as { cause?: unknown }).cause, depth++
  ) {
    const { code, message } = at as { code?: unknown; message?: unknown };
    if (typeof code !== "string") continue;
    const line = typeof message === "string" ? (message.split("\n")[0]?.trim() ?? "") : "";
    // OpenSSL's text ("…:SSL routines:…:wrong version number:…") says its reason in words. A TLS
    // failure met while writing is `EPROTO` with that text: named as Node names such reasons
    // elsewhere (ERR_SSL_WRONG_VERSION_NUMBER).
    const reason = /SSL routines:[^:]*:([^:]+):/.exec(line)?.[1];
    const named = code === "EPROTO" && reason !== undefined ? `ERR_SSL_${reason.toUpperCase().replace(/[^A-Z0-9]+/g, "_")}` : code;
    if (!known(named)) continue;
    return { code: named, text: reason ?? carriedNames(at, line), error: at };
  }
  return undefined;
}

/**
 * Node's text of a certificate not for the host asked for, naming the certificate's names when the
 * text does not: for an IP address Node lists only the certificate's IP addresses, none at all
 * when it carries only host names ("IP: 127.0.0.1 is not in the cert's list: ").
 */
function carriedNames(error: object, line: string): string {
  const names = (error as { cert?: { subjectaltname?: unknown } }).cert?.subjectaltname;
  if (typeof names !== "string" || names === "" || line.includes(names)) return line;
  return `${line.replace(/[\s:]+$/, "")}; the certificate carries ${names}`;
}
