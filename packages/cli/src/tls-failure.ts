/**
 * A TLS failure with the server, said for the command line: Node's own text
 * and code (for a wrong host name, the name asked for and the certificate's
 * names) and what to do about it; and the other way round, a plain `http://`
 * `--url` of a port that speaks TLS, which the server answers `400
 * protocol-error`. None of them is retried: asking again meets the same
 * certificate, the same server without TLS, or the same TLS port.
 */
import { isPlainHttpOnTlsRefusal, PLAIN_HTTP_ON_TLS_CODE, tlsErrorOf } from "@golem-stream/wire/internal";

/** Certificates of a CA this process does not trust (OpenSSL's `X509_V_ERR_` names, as Node's errors carry them). */
const UNTRUSTED_ISSUER = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_GET_ISSUER_CERT",
  "CERT_UNTRUSTED",
]);

const OUT_OF_DATE = new Set(["CERT_HAS_EXPIRED", "CERT_NOT_YET_VALID", "ERROR_IN_CERT_NOT_BEFORE_FIELD", "ERROR_IN_CERT_NOT_AFTER_FIELD"]);

const TRUST_CA = "for a private CA, trust its certificate: NODE_EXTRA_CA_CERTS=ca.pem in the command's environment";

/** What to do about a TLS failure of `code` (`ERR_SSL_…`, `ERR_TLS_…`, a certificate's), or a generic word for one this list lacks. */
function hintOf(code: string): string | undefined {
  if (UNTRUSTED_ISSUER.has(code)) return `the server's certificate is not issued by a CA this process trusts; ${TRUST_CA}`;
  if (OUT_OF_DATE.has(code))
    return "the server's certificate is not valid at this time: the server needs a current one (or this machine's clock is wrong)";
  if (code === "ERR_TLS_CERT_ALTNAME_INVALID" || code === "HOSTNAME_MISMATCH")
    return "the server's certificate does not carry the host name of --url: use a name it carries";
  if (code === "CERT_REVOKED") return "the server's certificate was revoked: the server needs a new one";
  if (code === "ERR_SSL_WRONG_VERSION_NUMBER") return "the server may not speak TLS: use http:// in --url";
  if (code.startsWith("ERR_SSL") || code.startsWith("ERR_TLS") || code.includes("CERT")) return "the TLS handshake with the server failed";
  return undefined;
}

/**
 * `error` (or an error in its `cause` chain) as a TLS failure: `<Node's text> (<code>): <what to do>`;
 * undefined when it is none.
 */
export function tlsFailure(error: unknown): string | undefined {
  const found = tlsErrorOf(error, (code) => hintOf(code) !== undefined);
  if (found === undefined) return undefined;
  const { code, text } = found;
  return `${text === "" ? code : text.includes(code) ? text : `${text} (${code})`}: ${hintOf(code)!}`;
}

/** What to say of a TLS port's refusal of a plain request. */
const PLAIN_HTTP_ON_TLS = `the server speaks TLS on that port and refused a plain HTTP request (400 ${PLAIN_HTTP_ON_TLS_CODE}): use https:// in --url`;

/** The hint for the catalogue request to `url` answered `status` with the envelope's `code`, when it is a TLS port's refusal of plain HTTP. */
export function plainHttpRefusal(url: URL, status: number, code: string): string | undefined {
  return isPlainHttpOnTlsRefusal(url, status, code) ? PLAIN_HTTP_ON_TLS : undefined;
}

/**
 * The hint for a session's failure (the client's `connection-lost`) when it is the client's word for
 * that refusal: its cause is the server's refusal, `protocol-error` and not retryable, which a
 * client gives up on for nothing else (a reconnect budget spent ends on a retryable one).
 */
export function plainHttpFailure(cause: unknown): string | undefined {
  const { code, retryable } = (cause ?? {}) as { code?: unknown; retryable?: unknown };
  return code === PLAIN_HTTP_ON_TLS_CODE && retryable === false ? PLAIN_HTTP_ON_TLS : undefined;
}

/** `url` with the TLS scheme of its plain one (`http:` to `https:`, `ws:` to `wss:`). */
export function tlsUrl(url: string): string {
  return url.replace(/^http:/i, "https:").replace(/^ws:/i, "wss:");
}
