/** The reconnect decision table of protocol section 9 (docs/protocol/client.md §4), row by row. */
import { describe, expect, it } from "vitest";
import { ProtocolError } from "@golem-stream/wire";
import { nextAttach, type ConnectionOutcome } from "../src/attach-policy.js";
import { ClientError } from "../src/errors.js";

const lost: ConnectionOutcome = { kind: "lost", cause: "closed (1006)" };
const rejected = (code: ConstructorParameters<typeof ProtocolError>[0], retryable?: boolean): ConnectionOutcome => ({
  kind: "rejected",
  error: new ProtocolError(code, "m", retryable === undefined ? {} : { retryable }),
});

describe("nextAttach", () => {
  it.each<
    [
      string,
      ConnectionOutcome,
      { accepted: boolean; sends: number; hasSession: boolean; takeover?: boolean; afterRevocation?: boolean },
      string,
    ]
  >([
    ["uncertain loss before acceptance", lost, { accepted: false, sends: 1, hasSession: false }, "same"],
    ["uncertain loss of a resume before acceptance", lost, { accepted: false, sends: 2, hasSession: true }, "same"],
    ["loss after acceptance", lost, { accepted: true, sends: 1, hasSession: true }, "fresh-resume"],
    ["retryable rejection of a start", rejected("overloaded"), { accepted: false, sends: 1, hasSession: false }, "fresh-start"],
    ["retryable rejection of a resume", rejected("internal-error"), { accepted: false, sends: 1, hasSession: true }, "fresh-resume"],
    [
      "retryable rejection of a takeover none of which was accepted (decisions §8: a resume would be superseded)",
      rejected("overloaded"),
      { accepted: false, sends: 1, hasSession: true, takeover: true },
      "fresh-takeover",
    ],
    [
      "retryable violation after a takeover's acceptance",
      rejected("input-gap"),
      { accepted: true, sends: 1, hasSession: true },
      "fresh-resume",
    ],
    ["retryable violation after acceptance", rejected("input-gap"), { accepted: true, sends: 1, hasSession: true }, "fresh-resume"],
    [
      "protocol-error flagged retryable after acceptance",
      rejected("protocol-error", true),
      { accepted: true, sends: 1, hasSession: true },
      "fresh-resume",
    ],
    ["definitive rejection", rejected("not-found"), { accepted: false, sends: 1, hasSession: false }, "fail"],
    ["superseded resume", rejected("superseded"), { accepted: false, sends: 1, hasSession: true }, "fail"],
    [
      "superseded answering the resume that followed a revocation",
      rejected("superseded"),
      { accepted: false, sends: 1, hasSession: true, afterRevocation: true },
      "fail",
    ],
    [
      "revocation answering a replayed acceptance (protocol 6.1)",
      { kind: "revoked", atAcceptance: true },
      { accepted: true, sends: 2, hasSession: true },
      "fresh-resume",
    ],
    [
      "revocation after a replayed acceptance and more of its attachment (another process took over)",
      { kind: "revoked", atAcceptance: false },
      { accepted: true, sends: 2, hasSession: true },
      "fail",
    ],
    [
      "revocation of a first-time acceptance",
      { kind: "revoked", atAcceptance: true },
      { accepted: true, sends: 1, hasSession: true },
      "fail",
    ],
    ["finished", { kind: "finished" }, { accepted: true, sends: 1, hasSession: true }, "done"],
    ["fatal", { kind: "fatal", error: new ClientError("server-violation", "x") }, { accepted: true, sends: 1, hasSession: true }, "fail"],
  ])("%s → %s", (_label, outcome, facts, expected) => {
    expect(nextAttach(outcome, { takeover: false, afterRevocation: false, ...facts }).kind).toBe(expected);
  });

  it("ends revoked when the resume that followed a revocation is refused superseded: another process holds the session", () => {
    const facts = { accepted: false, sends: 1, hasSession: true, takeover: false, afterRevocation: true };
    expect(nextAttach(rejected("superseded"), facts)).toMatchObject({ kind: "fail", error: { kind: "revoked", code: undefined } });
    expect(nextAttach(rejected("superseded"), { ...facts, afterRevocation: false })).toMatchObject({
      kind: "fail",
      error: { kind: "rejected", code: "superseded" },
    });
  });

  it("fails definitive rejections with the public code and revocations with kind revoked", () => {
    expect(
      nextAttach(rejected("forbidden"), { accepted: false, sends: 1, hasSession: false, takeover: false, afterRevocation: false }),
    ).toMatchObject({
      kind: "fail",
      error: { kind: "rejected", code: "forbidden" },
    });
    expect(
      nextAttach(
        { kind: "revoked", atAcceptance: false },
        { accepted: true, sends: 1, hasSession: true, takeover: false, afterRevocation: false },
      ),
    ).toMatchObject({
      kind: "fail",
      error: { kind: "revoked", code: undefined },
    });
  });
});
