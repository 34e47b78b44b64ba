/**
 * TLS failures no new attempt can fix: the server's certificate refused by
 * Node's verification (an unknown or self-signed CA, expired, revoked, not
 * for the URL's host), a server (or proxy) that requires a client
 * certificate this process does not give, an `https://`/`wss://` URL of a
 * server that does not speak TLS, or the other way round, an `http://`/`ws://` URL of a port that
 * speaks TLS (the server answers that plain request `400 protocol-error`).
 * The Node transport fails the call (or the catalogue request)
 * with one at once, saying what Node said and how to fix it, instead of
 * retrying through the reconnect policy. Node only: a browser says nothing
 * of why a connection failed (but its catalogue request may read the 400).
 */
import type { ProtocolError } from "@golem-stream/wire";
import { isPlainHttpOnTlsRefusal, tlsErrorOf } from "@golem-stream/wire/internal";
import { ClientError } from "./errors.js";

/** Certificates of a CA this process does not trust: trusting the CA fixes them. */
const UNTRUSTED_ISSUER = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_GET_ISSUER_CERT",
  "CERT_UNTRUSTED",
]);

/** Outside the certificate's validity period. */
const OUT_OF_DATE = new Set(["CERT_HAS_EXPIRED", "CERT_NOT_YET_VALID", "ERROR_IN_CERT_NOT_BEFORE_FIELD", "ERROR_IN_CERT_NOT_AFTER_FIELD"]);

/** The certificate is not for the host the URL names. */
const WRONG_HOST = new Set(["ERR_TLS_CERT_ALTNAME_INVALID", "HOSTNAME_MISMATCH"]);

/** Node's other certificate verification failures (OpenSSL's `X509_V_ERR_` names): the chain itself is unusable. */
const INVALID_CHAIN = new Set([
  "UNABLE_TO_DECRYPT_CERT_SIGNATURE",
  "UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY",
  "CERT_SIGNATURE_FAILURE",
  "CERT_CHAIN_TOO_LONG",
  "INVALID_CA",
  "PATH_LENGTH_EXCEEDED",
  "INVALID_PURPOSE",
  "CERT_REJECTED",
]);

const TRUST_CA = "wsTransport({ tls: { ca } }) with the CA's certificate (PEM), or NODE_EXTRA_CA_CERTS=ca.pem in the environment";

const GIVE_CLIENT_CERTIFICATE = "wsTransport({ tls: { cert, key } }) with a certificate it accepts and its private key (PEM)";

/** What to do about a refusal of `code`, or undefined when it is no permanent TLS failure. */
function hintOf(code: string): string | undefined {
  if (UNTRUSTED_ISSUER.has(code))
    return `the server's certificate is not issued by a certificate authority this process trusts; for a private CA, trust it: ${TRUST_CA}`;
  if (code === "DEPTH_ZERO_SELF_SIGNED_CERT")
    return "the server's certificate is self-signed; trust it as its own CA: wsTransport({ tls: { ca } }) with that certificate (PEM), or NODE_EXTRA_CA_CERTS=cert.pem in the environment";
  if (OUT_OF_DATE.has(code))
    return "the server's certificate is not valid at this time: the server needs a current one (or this machine's clock is wrong)";
  if (WRONG_HOST.has(code))
    return "the server's certificate does not carry the name asked for (the URL's host, or tls.servername): use a name it carries in the URL, or give that name as wsTransport({ tls: { servername } })";
  if (code === "CERT_REVOKED") return "the server's certificate was revoked: the server needs a new one";
  if (INVALID_CHAIN.has(code))
    return `the server's certificate chain is not valid: the server needs a valid one; for a private CA, trust it: ${TRUST_CA}`;
  if (code === "ERR_SSL_WRONG_VERSION_NUMBER") return "the server may not speak TLS: try http:// (ws://) instead of https:// (wss://)";
  // A server or proxy that requires a client certificate: TLS 1.3 says so; TLS 1.2 has no alert
  // of its own for it, and refuses the whole handshake.
  if (code === "ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED")
    return `the server (or a proxy before it) requires a client certificate: give one as ${GIVE_CLIENT_CERTIFICATE}`;
  if (code === "ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE")
    return `the server (or a proxy before it) refused the TLS handshake, as one that requires a client certificate refuses a client without one: give one as ${GIVE_CLIENT_CERTIFICATE} (or the two share no TLS version or cipher)`;
  return undefined;
}

/**
 * The `ClientError` (`connection-lost`, no public code, not retryable) for `error` when it, or an
 * error in its `cause` chain (the global `fetch` hides Node's error there), is a TLS failure no new
 * attempt can fix; undefined otherwise. `url` is what was being reached.
 */
export function tlsRefusal(error: unknown, url: string): ClientError | undefined {
  const found = tlsErrorOf(error, (code) => hintOf(code) !== undefined);
  if (found === undefined) return undefined;
  const { code, text, error: at } = found;
  const hint = hintOf(code)!;
  const target = new URL(url);
  return new ClientError(
    "connection-lost",
    `TLS with ${target.protocol}//${target.host} failed: ${text === "" ? code : `${text} (${code})`}. ` +
      `${hint[0]!.toUpperCase()}${hint.slice(1)}. Not retried: every attempt would fail the same way`,
    { cause: at },
  );
}

/**
 * The `ClientError` (`connection-lost`, no public code, not retryable) for `refusal`, the server's
 * answer with `status` to a request to `url`, when it is a TLS port's answer to plain HTTP; undefined
 * otherwise. Any other refusal is the caller's to report as it does.
 */
export function plainHttpRefusal(refusal: ProtocolError, status: number, url: string): ClientError | undefined {
  if (!isPlainHttpOnTlsRefusal(url, status, refusal.code)) return undefined;
  const { host, protocol } = new URL(url);
  return new ClientError(
    "connection-lost",
    `The server at ${host} speaks TLS on that port and refused this plain ${protocol}// request ` +
      `(${status} ${refusal.code}: ${refusal.message}). Use wss://${host} (https://${host}) instead. ` +
      "Not retried: every attempt would fail the same way",
    { cause: refusal },
  );
}
