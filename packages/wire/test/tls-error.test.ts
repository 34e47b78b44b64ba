import { describe, expect, it } from "vitest";
import { tlsErrorOf } from "../src/internal.js";

const nodeError = (message: string, code: string, extra: object = {}): Error => Object.assign(new Error(message), { code }, extra);
const known = (code: string): boolean =>
  code.startsWith("ERR_SSL") || code.endsWith("SIGNATURE") || code === "ERR_TLS_CERT_ALTNAME_INVALID";

describe("tlsErrorOf", () => {
  it("finds the TLS error down the cause chain (the global fetch hides Node's there), not past four levels", () => {
    const tls = nodeError("unable to verify the first certificate", "UNABLE_TO_VERIFY_LEAF_SIGNATURE");
    const wrapped = Object.assign(new TypeError("fetch failed"), { cause: tls });
    expect(tlsErrorOf(wrapped, known)).toEqual({
      code: "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
      text: "unable to verify the first certificate",
      error: tls,
    });
    let deep: object = tls;
    for (let i = 0; i < 4; i++) deep = { cause: deep };
    expect(tlsErrorOf(deep, known)).toBeUndefined();
  });

  it("names EPROTO with OpenSSL's reason as Node names it, and says the reason of OpenSSL's text in words", () => {
    const line = "write EPROTO 804C:error:0A00010B:SSL routines:ssl3_get_record:wrong version number:../ssl3_record.c:350:";
    expect(tlsErrorOf(nodeError(line, "EPROTO"), known)).toMatchObject({
      code: "ERR_SSL_WRONG_VERSION_NUMBER",
      text: "wrong version number",
    });
    expect(tlsErrorOf(nodeError(line, "ERR_SSL_WRONG_VERSION_NUMBER"), known)).toMatchObject({ text: "wrong version number" });
  });

  it("adds the certificate's names to a host mismatch whose text lacks them; keeps the first line only", () => {
    const mismatch = nodeError(
      "Hostname/IP does not match certificate's altnames: IP: 127.0.0.1 is not in the cert's list: \nmore",
      "ERR_TLS_CERT_ALTNAME_INVALID",
      {
        cert: { subjectaltname: "DNS:elsewhere.test" },
      },
    );
    expect(tlsErrorOf(mismatch, known)?.text).toBe(
      "Hostname/IP does not match certificate's altnames: IP: 127.0.0.1 is not in the cert's list; the certificate carries DNS:elsewhere.test",
    );
  });

  it.each([undefined, null, "text", 3, new Error("no code"), nodeError("refused", "ECONNREFUSED"), { code: 5 }])(
    "finds none in %j",
    (error) => {
      expect(tlsErrorOf(error, known)).toBeUndefined();
    },
  );
});
