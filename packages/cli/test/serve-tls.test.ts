/**
 * The certificate `serve --tls-cert` takes, at start and on each reload:
 * one every client would refuse for its dates is refused first, saying
 * when it expired (or becomes valid), with the clock it was checked by.
 */
import { join } from "node:path";
import { X509Certificate } from "node:crypto";
import { makeTestCertificates } from "@golem-stream/test-support";
import { afterAll, describe, expect, it } from "vitest";
import { readServeTls } from "../src/commands/serve-tls.js";

const certificates = makeTestCertificates();
afterAll(() => certificates.remove());
const { cert, key } = certificates.issue("dated");
const files = { cert: join(certificates.directory, "dated.crt"), key: join(certificates.directory, "dated.key") };
const { validFrom, validTo } = new X509Certificate(cert);
const DAY = 86_400_000;

describe("serve's certificate, by its dates", () => {
  it("is taken within them", async () => {
    const tls = await readServeTls(files, new Date(new Date(validFrom).getTime() + 60_000));
    expect(tls.credentials).toEqual({ cert, key });
    expect(tls.description).toContain(`valid until ${new Date(validTo).toISOString()}`);
  });

  it("is refused once expired, naming the file and the date", async () => {
    await expect(readServeTls(files, new Date(new Date(validTo).getTime() + DAY))).rejects.toMatchObject({
      exitCode: 2,
      message: `--tls-cert ${files.cert}: expired on ${new Date(validTo).toISOString()}: every client would refuse it (CERT_HAS_EXPIRED); give the renewed one`,
    });
  });

  it("is refused before it is valid, with the clock it was checked by", async () => {
    const now = new Date(new Date(validFrom).getTime() - DAY);
    await expect(readServeTls(files, now)).rejects.toMatchObject({
      exitCode: 2,
      message: expect.stringContaining(
        `not valid before ${new Date(validFrom).toISOString()} (this machine's clock says ${now.toISOString()})`,
      ),
    });
  });
});
