/**
 * A TLS failure with the server, said for the command line: Node's own text
 * and code (for a wrong host name, the name asked for and the certificate's
 * names) and what to do about it. None of them is retried: asking again meets
 * the same certificate, or the same server without TLS.
 */
import { tlsErrorOf } from "@golem-stream/wire/internal";

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
