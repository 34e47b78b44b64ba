/**
 * The certificate and key the server's own listener serves TLS with
 * (`listen(port, host, { tls })`), checked before they are used: a PEM
 * that does not parse, a key that is not the certificate's, or a wrong
 * passphrase fails with `TlsCertificateError` before anything listens, and
 * a replacement (`setTlsCertificate`) that fails leaves the certificate in
 * use as it was.
 */
import { createSecureContext, type SecureContextOptions } from "node:tls";

/**
 * PEM text (or its bytes) of the server's certificate and private key. Only
 * what a server needs to present itself: client certificates are not asked
 * for, so no CA list is taken.
 */
export interface TlsCredentials {
  /** The server's certificate, followed by the intermediate certificates of its chain (a "full chain" file). */
  readonly cert: string | Uint8Array;
  /** The certificate's private key. */
  readonly key: string | Uint8Array;
  /** The key's passphrase, when it is encrypted. */
  readonly passphrase?: string;
}

/** What went wrong with TLS: `tls-certificate-invalid` (the credentials cannot be used) or `tls-not-enabled` (the listener serves plain HTTP). */
export type TlsErrorCode = "tls-certificate-invalid" | "tls-not-enabled";

/** TLS credentials that cannot be used, or a replacement asked of a server that does not serve TLS. */
export class TlsCertificateError extends Error {
  override readonly name = "TlsCertificateError";
  readonly code: TlsErrorCode;

  constructor(code: TlsErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/**
 * The options Node's TLS server takes for `credentials`, once a secure
 * context was built from them: OpenSSL's refusal (a PEM without its start
 * line, `key values mismatch`, `bad decrypt`) becomes a `TlsCertificateError`
 * carrying its message.
 */
export function checkedTlsOptions(credentials: TlsCredentials): SecureContextOptions {
  if (typeof credentials !== "object" || credentials === null) {
    throw new TlsCertificateError("tls-certificate-invalid", "tls needs { cert, key } (PEM)");
  }
  const options: SecureContextOptions = {
    cert: pem(credentials.cert, "cert"),
    key: pem(credentials.key, "key"),
    ...(credentials.passphrase === undefined ? {} : { passphrase: credentials.passphrase }),
  };
  try {
    createSecureContext(options);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new TlsCertificateError("tls-certificate-invalid", `the TLS certificate and key cannot be used: ${reason}`, { cause: error });
  }
  return options;
}

function pem(value: unknown, name: string): string | Buffer {
  if (typeof value === "string" && value.length > 0) return value;
  if (value instanceof Uint8Array && value.length > 0) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  throw new TlsCertificateError("tls-certificate-invalid", `tls.${name} must be PEM text or its bytes`);
}
