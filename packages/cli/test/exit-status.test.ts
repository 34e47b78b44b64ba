/**
 * The words for an invocation the server failed without a reason (output/exit-status.ts): a
 * restart is named as a likely cause only when this process was away, and only for invocations a
 * restart still fails (those that are not replayable). One that followed the failure of an input
 * already reported on its own line does not repeat it.
 */
import { describe, expect, it } from "vitest";
import { ClientError } from "@golem-stream/client";
import { EXIT } from "../src/exit-codes.js";
import { failureOf } from "../src/output/exit-status.js";

const failed = new ClientError("invocation-failed", "invocation failed", { code: "invocation-failed" });

describe("failureOf: invocation-failed without a reason", () => {
  it("after a reconnect names a restart of an invocation that is not replayable; after a resume, stdin too", () => {
    const away = failureOf(failed, { wasAway: true });
    expect(away.exitCode).toBe(EXIT.invocationFailed);
    expect(away.message).toMatch(
      /it may have been a server restart, which fails every invocation it was running that is not replayable\. The output it produced before was delivered/,
    );
    expect(failureOf(failed, { wasAway: true, resumed: true }).message).toMatch(
      /a server restart \(it fails every invocation it was running that is not replayable\), or an input only the interrupted process could feed \(stdin, or a file it read\)/,
    );
  });

  it("the client's own word of a restart (it was away) gives way to the CLI's, which knows of a resume and its inputs", () => {
    // As the client words it (@golem-stream/client's awayFailureNote after the server's message).
    const noted = new ClientError(
      "invocation-failed",
      "invocation failed (the invocation failed on the server while this process was away from it, without a reason (the server's log has it); it may have been a server restart, which fails every invocation it was running that is not replayable)",
      { code: "invocation-failed" },
    );
    expect(failureOf(noted, { wasAway: true }).message).toBe(failureOf(failed, { wasAway: true }).message);
    expect(failureOf(noted, { wasAway: true, resumed: true }).message).toBe(failureOf(failed, { wasAway: true, resumed: true }).message);
  });

  it("with the server there all along names no restart", () => {
    const there = failureOf(failed);
    expect(there.exitCode).toBe(EXIT.invocationFailed);
    expect(there.message).not.toMatch(/restart/);
  });
});

describe("failureOf: invocation-failed after an input failure already reported", () => {
  // The client adds the input's failure to the server's message, with the input's error as cause.
  const inputError = new Error("stdin line 2 is not valid JSON");
  const after = (message: string) =>
    new ClientError("invocation-failed", `${message} (after an input of this call failed here: ${inputError.message})`, {
      code: "invocation-failed",
      cause: inputError,
    });

  it("does not repeat it: the server's generic message says the input was cancelled, a message of its own is kept", () => {
    expect(failureOf(after("invocation failed"), { inputFailureShown: inputError }).message).toBe(
      "the invocation failed on the server (invocation-failed) after its input was cancelled",
    );
    expect(failureOf(after("the total overflowed"), { inputFailureShown: inputError }).message).toBe(
      "invocation failed (invocation-failed): the total overflowed",
    );
  });

  it("keeps it when it was not reported, or another input failure was", () => {
    expect(failureOf(after("invocation failed")).message).toContain("stdin line 2 is not valid JSON");
    expect(failureOf(after("invocation failed"), { inputFailureShown: new Error("other") }).message).toContain(
      "stdin line 2 is not valid JSON",
    );
  });
});

describe("failureOf: giving up after a lost connection", () => {
  const gaveUp = new ClientError("connection-lost", "gave up after 3 reconnect attempts without progress (last: connect ECONNREFUSED)");

  it("says the invocation may keep running, and names resume with the checkpoint when there is one", () => {
    const withCheckpoint = failureOf(gaveUp, { started: "accepted", checkpoint: "sg.ckpt" });
    expect(withCheckpoint.exitCode).toBe(EXIT.connectionLost);
    expect(withCheckpoint.message).toBe(
      "connection lost: gave up after 3 reconnect attempts without progress (last: connect ECONNREFUSED). " +
        "The invocation may keep running on the server: `golem-stream resume sg.ckpt` continues it",
    );
    expect(failureOf(gaveUp, { started: "accepted" }).message).toMatch(
      /\. The invocation may keep running on the server; without a checkpoint nothing can continue it$/,
    );
  });

  it("the resume it names carries the --url and --max-catalogue-bytes in effect that are not the defaults, as the user types the CLI", () => {
    const connection = { url: "http://other-host:9000", maxCatalogueBytes: 16 * 2 ** 20 };
    expect(failureOf(gaveUp, { checkpoint: "it's.ckpt", connection, command: "npx golem-stream" }).message).toMatch(
      /: `npx golem-stream resume 'it'\\''s\.ckpt' --url http:\/\/other-host:9000 --max-catalogue-bytes 16777216` continues it$/,
    );
    const defaults = { url: "http://127.0.0.1:8080", maxCatalogueBytes: 8 * 2 ** 20 };
    expect(failureOf(gaveUp, { checkpoint: "sg.ckpt", connection: defaults }).message).toMatch(
      /: `golem-stream resume sg\.ckpt` continues it$/,
    );
  });
});

describe("failureOf: a session token refused on the way back to the session", () => {
  const refused = new ClientError("rejected", "the token is invalid", { code: "invalid-token" });

  it("after a resume or a reconnect says which two things make it valid, naming the checkpoint's token", () => {
    const resumed = failureOf(refused, { checkpoint: "/tmp/my run.ckpt", resumed: true, command: "npx golem-stream" });
    expect(resumed.exitCode).toBe(EXIT.rejected);
    expect(resumed.message).toBe(
      "rejected (invalid-token): the token is invalid: the server refused a token of this invocation (its session token, or an output stream's cursor). " +
        "They are valid only for the caller that started the invocation " +
        "(the same bearer token, or for a JWT the same subject) and only while the server's keyring holds the key that signed them " +
        "(`npx golem-stream token inspect` of a token in '/tmp/my run.ckpt', its sessionToken or a cursor, names the key): return to it with the token that started it, at a server of the same deployment",
    );
    expect(failureOf(refused, { wasAway: true }).message).toMatch(
      /only while the server's keyring holds the key that signed them: return to it/,
    );
  });

  it("on a first start is the server's word alone", () => {
    expect(failureOf(refused).message).toBe("rejected (invalid-token): the token is invalid");
  });
});
