/**
 * The throwaway certificate authority the TLS tests share: a CA, server
 * certificates it issues for 127.0.0.1 and localhost, and the name a new
 * connection is served, over a real TLS listener on loopback.
 */
import { X509Certificate } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer } from "node:tls";
import { expect, it } from "vitest";
import { makeTestCertificates, servedCertificateName } from "../src/index.js";

it("issues certificates a client trusting the CA accepts for 127.0.0.1, and names the one served; remove deletes them", async () => {
  const certificates = makeTestCertificates();
  expect(readFileSync(certificates.caFile, "utf8")).toBe(certificates.ca);
  const server = createServer(certificates.issue("first"), (socket) => socket.end());
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
    expect(await servedCertificateName(url, certificates.ca)).toBe("first");
    server.setSecureContext(certificates.issue("second"));
    expect(await servedCertificateName(url, certificates.ca)).toBe("second");
    // Another CA's clients refuse it: the certificates are this CA's alone.
    const other = makeTestCertificates();
    await expect(servedCertificateName(url, other.ca)).rejects.toThrow(/certificate/);
    other.remove();
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    certificates.remove();
  }
  expect(existsSync(certificates.directory)).toBe(false);
});

it("makes its CA in a directory given to it; a certificate for other names when asked", () => {
  const directory = mkdtempSync(join(tmpdir(), "golem-stream-tls-given-"));
  try {
    const certificates = makeTestCertificates(directory);
    expect(certificates.directory).toBe(directory);
    expect(certificates.caFile).toBe(join(directory, "ca.crt"));
    expect(existsSync(join(directory, "ca.key"))).toBe(true);
    expect(new X509Certificate(certificates.issue("plain").cert).subjectAltName).toBe("IP Address:127.0.0.1, DNS:localhost");
    expect(new X509Certificate(certificates.issue("elsewhere", "DNS:elsewhere.test").cert).subjectAltName).toBe("DNS:elsewhere.test");
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});
