/**
 * The moves of the model-based test of a live `reverse` session
 * (session-model.slow.test.ts) as a fast-check `commands` arbitrary:
 * reverse-traffic.ts (items, violations, ends, cancels, cuts, the detached
 * timeout) and reverse-attach.ts (every kind of attach).
 */
import fc from "fast-check";
import type { ClientCancelReason } from "@golem-stream/wire";
import {
  AttemptConflict,
  DoubledResume,
  ItemBeforeAcceptance,
  RacingResumes,
  ReplayAttempt,
  Resume,
  SendThenResume,
  Takeover,
  TakeoverOverHeldSocket,
} from "./reverse-attach.js";
import {
  CancelInput,
  CancelOutput,
  ConflictingItem,
  DetachedTimeout,
  EndInput,
  GapItem,
  InvalidChannel,
  LateOutputCancel,
  ResendItem,
  SendItem,
  SendThenCut,
  WrongEnd,
} from "./reverse-traffic.js";
import { Cut, StaleResume } from "./model-moves.js";
import type { SessionModel, SessionUnderTest } from "./session-model.js";

export { movesRun } from "./model-moves.js";

/** The name of every kind of move. */
export const MOVES = [
  "SendItem",
  "ResendItem",
  "ConflictingItem",
  "GapItem",
  "WrongEnd",
  "InvalidChannel",
  "EndInput",
  "CancelInput",
  "CancelOutput",
  "Cut",
  "SendThenCut",
  "Resume",
  "Takeover",
  "ReplayAttempt",
  "StaleResume",
  "AttemptConflict",
  "SendThenResume",
  "ItemBeforeAcceptance",
  "LateOutputCancel",
  "RacingResumes",
  "DoubledResume",
  "DetachedTimeout",
  "TakeoverOverHeldSocket",
] as const;

/** Short texts with multi-byte scalars, a surrogate pair and JSON escapes. */
const text = fc.string({ unit: fc.constantFrom("a", "b", "z", " ", "é", "€", "😀", '"', "\\", "\n"), maxLength: 6 });
const reason = fc.constantFrom<ClientCancelReason>("cancelled", "consumer-drop", "source-unavailable");

/** Every move, weighted towards traffic and attaches so that sessions live long enough to be interesting. */
export function sessionCommands(
  maxCommands: number,
  replayPath?: string,
): fc.Arbitrary<Iterable<fc.AsyncCommand<SessionModel, SessionUnderTest>>> {
  const sendItem = text.map((t) => new SendItem(t));
  return fc.commands(
    [
      ...Array.from({ length: 8 }, () => sendItem),
      fc.nat().map((pick) => new ResendItem(pick)),
      fc.nat().map((pick) => new ResendItem(pick)),
      fc.tuple(fc.nat(), text).map(([pick, t]) => new ConflictingItem(pick, t)),
      fc.tuple(fc.nat(3), fc.boolean()).map(([skip, held]) => new GapItem(skip, held)),
      fc.constantFrom(-2, -1, 1, 2).map((delta) => new WrongEnd(delta)),
      fc.constantFrom("unknown-item", "unknown-cancel", "item-on-output", "end-on-output" as const).map((kind) => new InvalidChannel(kind)),
      fc.constant(new EndInput()),
      reason.map((why) => new CancelInput(why)),
      reason.map((why) => new CancelOutput(why)),
      reason.map((why) => new CancelOutput(why)),
      fc.constant(new Cut<string>("Cut")),
      fc.constant(new Cut<string>("Cut")),
      fc.constant(new DetachedTimeout()),
      fc.nat().map((pick) => new TakeoverOverHeldSocket(pick)),
      fc.array(text, { minLength: 1, maxLength: 3 }).map((texts) => new SendThenCut(texts)),
      fc.nat().map((pick) => new Resume(pick)),
      fc.nat().map((pick) => new Resume(pick)),
      fc.tuple(fc.nat(), fc.nat()).map(([token, cursor]) => new Takeover(token, cursor)),
      fc.nat().map((pick) => new StaleResume<string>("StaleResume", pick)),
      fc.nat().map((pick) => new ReplayAttempt(pick)),
      fc.nat().map((pick) => new AttemptConflict(pick)),
      fc
        .tuple(fc.array(text, { minLength: 1, maxLength: 3 }), fc.boolean(), fc.nat())
        .map(([texts, behind, cursor]) => new SendThenResume(texts, behind, cursor)),
      text.map((t) => new ItemBeforeAcceptance(t)),
      fc.nat().map((pick) => new RacingResumes(pick)),
      fc.nat().map((pick) => new DoubledResume(pick)),
      // Applicable only in the short window between an output cancel and the next item: often proposed.
      ...Array.from({ length: 6 }, () => fc.tuple(reason, fc.boolean()).map(([why, twice]) => new LateOutputCancel(why, twice))),
    ],
    { maxCommands, size: "medium", ...(replayPath === undefined ? {} : { replayPath }) },
  );
}
