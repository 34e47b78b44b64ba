/**
 * A throwaway CA and server certificates it issues for 127.0.0.1 and
 * localhost, made with openssl: for tests of the server's own TLS listener,
 * in the library and behind `golem-stream serve --tls-cert`.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { connect } from "node:tls";
import { join } from "node:path";

export interface TestCertificates {
  readonly directory: string;
  /** The CA's certificate (PEM), for clients to trust. */
  readonly ca: string;
  /** The CA certificate's file (for `NODE_EXTRA_CA_CERTS`). */
  readonly caFile: string;
  /**
   * Issues a server certificate named `name` (its PEM files `<name>.crt` and `<name>.key` in
   * `directory`), for 127.0.0.1 and localhost unless `subjectAltName` says otherwise
   * (`DNS:streams.example`, say).
   */
  issue(name: string, subjectAltName?: string): { readonly cert: string; readonly key: string };
  /** Deletes `directory`, the CA's key included. */
  remove(): void;
}

/** A new CA in `directory`, or in a temporary directory of its own when none is given. */
export function makeTestCertificates(directory = mkdtempSync(join(tmpdir(), "golem-stream-tls-"))): TestCertificates {
  const openssl = (...args: string[]): void => void execFileSync("openssl", args, { cwd: directory, stdio: "pipe" });
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  openssl("req", "-x509", ...ec, "-days", "2", "-subj", "/CN=golem-stream-test-ca", "-keyout", "ca.key", "-out", "ca.crt");
  writeFileSync(join(directory, "server.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
  return {
    directory,
    ca: readFileSync(join(directory, "ca.crt"), "utf8"),
    caFile: join(directory, "ca.crt"),
    issue: (name, subjectAltName) => {
      const extensions = subjectAltName === undefined ? "server.ext" : `${name}.ext`;
      if (subjectAltName !== undefined) writeFileSync(join(directory, extensions), `subjectAltName=${subjectAltName}\n`);
      openssl("req", ...ec, "-subj", `/CN=${name}`, "-keyout", `${name}.key`, "-out", `${name}.csr`);
      openssl(
        "x509",
        "-req",
        "-in",
        `${name}.csr`,
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        extensions,
        "-out",
        `${name}.crt`,
      );
      return { cert: readFileSync(join(directory, `${name}.crt`), "utf8"), key: readFileSync(join(directory, `${name}.key`), "utf8") };
    },
    remove: () => rmSync(directory, { recursive: true, force: true }),
  };
}

/** The common name of the certificate a new TLS connection to `url` (`https://host:port`) is served, trusting `ca`. */
export async function servedCertificateName(url: string, ca: string): Promise<string> {
  const { hostname, port } = new URL(url);
  const socket = connect({ host: hostname, port: Number(port), ca });
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once("secureConnect", () => resolve());
      socket.once("error", reject);
    });
    return String(socket.getPeerCertificate().subject.CN);
  } finally {
    socket.destroy();
  }
}
