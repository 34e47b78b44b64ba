/**
 * A TLS failure of the session connection (`resume`'s takeover goes there without a catalogue
 * request first): the client fails the call at once with `connection-lost`, Node's error as its
 * cause, and the CLI says it for the command line, NODE_EXTRA_CA_CERTS rather than the library's
 * `wsTransport({ tls })`.
 */
import { describe, expect, it } from "vitest";
import { ClientError } from "@golem-stream/client";
import { EXIT } from "../src/exit-codes.js";
import { failureOf } from "../src/output/exit-status.js";
import { tlsFailure } from "../src/tls-failure.js";

const nodeError = (message: string, code: string): Error => Object.assign(new Error(message), { code });

describe("a TLS failure of the session connection", () => {
  it("is said with Node's text and the command line's remedy, not as a lost connection", () => {
    const cause = nodeError("unable to verify the first certificate", "UNABLE_TO_VERIFY_LEAF_SIGNATURE");
    const error = new ClientError("connection-lost", "TLS with wss://h:1 failed: … wsTransport({ tls: { ca } }) …", { cause });
    const failure = failureOf(error, { started: "accepted" });
    expect(failure.exitCode).toBe(EXIT.connectionLost);
    expect(failure.message).toMatch(
      /^cannot reach the server: unable to verify the first certificate \(UNABLE_TO_VERIFY_LEAF_SIGNATURE\): the server's certificate is not issued by a CA this process trusts; for a private CA, trust its certificate: NODE_EXTRA_CA_CERTS=ca\.pem in the command's environment\. The invocation may keep running on the server/,
    );
    expect(failure.message).not.toMatch(/wsTransport/);
  });

  it("a give-up after reconnecting is still a lost connection", () => {
    const error = new ClientError(
      "connection-lost",
      "gave up after 10 reconnect attempts without progress (last: connection closed (1006))",
      {
        cause: new Error("connection closed (1006)"),
      },
    );
    expect(failureOf(error).message).toMatch(/^connection lost: gave up/);
  });

  it("names a write's EPROTO as Node names the reason elsewhere", () => {
    const eproto = nodeError(
      "write EPROTO 804C:error:0A00010B:SSL routines:ssl3_get_record:wrong version number:../deps/openssl/openssl/ssl/record/ssl3_record.c:350:",
      "EPROTO",
    );
    expect(tlsFailure(eproto)).toBe(
      "wrong version number (ERR_SSL_WRONG_VERSION_NUMBER): the server may not speak TLS: use http:// in --url",
    );
    expect(tlsFailure(nodeError("connect ECONNREFUSED 127.0.0.1:9", "ECONNREFUSED"))).toBeUndefined();
  });
});
