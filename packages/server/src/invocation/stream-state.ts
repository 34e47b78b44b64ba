/**
 * The in-memory view of one durable stream while its session is loaded:
 * the store record's fields that change (count, terminal state) plus what
 * only a running invocation has (the input queue, the producer's abort
 * controller, the output backlog window). Bounded by the session's stream
 * limit (4096).
 */
import type { BinaryItem } from "../agent-host.js";
import type { InputQueue } from "./input-queue.js";
import type { OutputReplay } from "./output-replay.js";
import type { ElementKind, InputCommitWatcher, InputTerminal, NewStream, StreamParent, StreamRecord } from "../store/session-store.js";
import type { SchemaValueJson, StreamDirection } from "@golem-stream/wire";
import { storedGraph, type SchemaGraph } from "../values.js";

/** A watched commit of input chunks that later chunks of its stream may join (watched-input-commit.ts). */
export interface JoinableInputCommit extends InputCommitWatcher {
  /** Who is told of the outcome: a chunk joins only a commit of its own listener. */
  readonly listener: object;
  /** A chunk joined the commit's write: the stream's count after it, and the permits it releases at the outcome. */
  extend(count: bigint, releaseBytes: number): void;
}

/** What an agent reads from an input stream. */
export type InputItem =
  | { readonly kind: "value"; readonly value: SchemaValueJson }
  | { readonly kind: "bytes"; readonly bytes: Uint8Array }
  | { readonly kind: "blob"; readonly blob: BinaryItem };

/** The part of `item` (a chunk starting at `sequence`) from `from` on: for packed bytes a suffix, otherwise all or nothing. */
export function itemFrom(item: InputItem, sequence: bigint, from: bigint): InputItem | undefined {
  if (from <= sequence) return item;
  if (item.kind !== "bytes") return undefined;
  const skip = Number(from - sequence);
  return skip >= item.bytes.length ? undefined : { kind: "bytes", bytes: item.bytes.subarray(skip) };
}

export class StreamState {
  readonly streamId: string;
  readonly ordinal: number;
  readonly direction: StreamDirection;
  readonly elementKind: ElementKind;
  readonly elementGraphText: string;
  readonly coordinate: string;
  readonly provisionalRef: string | undefined;
  readonly parent: StreamParent;
  readonly token: string;
  /**
   * Input: durably accepted items. Output: items produced and handed to the
   * store (their commits may still be under way).
   */
  count: bigint;
  /** Output: items the store has committed. Behind `count` only while commits are under way, or after one failed. */
  outputCommitted: bigint;
  /** Input, at the owner: items handed to the agent's queue (behind `count` while another node's attachment commits them). */
  fed: bigint;
  /** Set while the owner feeds `fed` up to `count`. */
  feeding = false;
  inputTerminal: InputTerminal | undefined;
  /**
   * Input: the store's write of `inputTerminal` while it is on its way (set with it, cleared once
   * it settled; never rejects). Until then the terminal is not durable: an acceptance waits for
   * it before reporting the high-water (attachment.ts).
   */
  inputTerminalWrite: Promise<void> | undefined;
  outputTerminal: boolean;
  /** Input only, while the invocation runs. */
  queue: InputQueue<InputItem> | undefined;
  /** Output, on a re-run: what the run before committed, which the producer's items are compared with (output-replay.ts). */
  replay: OutputReplay | undefined;
  /** Output only, while its producer runs. */
  producer: AbortController | undefined;
  /** Output events recorded but not yet sent by the live attachment. */
  backlog = 0;
  /** Their payload bytes, charged to the session's byte permits until sent. */
  backlogBytes = 0;
  readonly backlogWaiters: (() => void)[] = [];
  /**
   * Commits of input chunks handed to the store through a watcher (no promise per chunk,
   * `SessionStore.acceptInputWatched`): how many were handed over and how many have settled
   * (the store settles them in the order they were handed over), and what waits for them.
   */
  #watchedIssued = 0;
  #watchedSettled = 0;
  #watchedWaiters: { readonly target: number; readonly resolve: () => void }[] = [];
  /** The promise `inputCommitted` last made for the watched commits, and the count it waits for (one per count, not per call). */
  #watchedPromise: Promise<void> | undefined;
  #watchedTarget = 0;
  /** The commit of the last chunk handed to the store with a promise. */
  #promisedCommit: Promise<void> = Promise.resolve();
  /** Input: settles when every input chunk handed to the store so far is committed (or its commit failed). */
  get inputCommitted(): Promise<void> {
    if (this.#watchedSettled >= this.#watchedIssued) return this.#promisedCommit;
    if (this.#watchedPromise !== undefined && this.#watchedTarget === this.#watchedIssued) return this.#watchedPromise;
    const target = this.#watchedIssued;
    const promised = this.#promisedCommit;
    const watched = new Promise<void>((resolve) => this.#watchedWaiters.push({ target, resolve })).then(() => promised);
    this.#watchedPromise = watched;
    this.#watchedTarget = target;
    return watched;
  }
  /** Input: the commit of the chunk just handed to the store with a promise (its reaction, which never rejects). */
  set inputCommitted(committed: Promise<void>) {
    this.#promisedCommit = committed;
  }
  /** Input: the watched commit the last chunk was handed to the store with (the next may join it). */
  lastWatchedCommit: JoinableInputCommit | undefined;
  /** Input: one more chunk handed to the store with a watcher; `inputCommitted` waits for it. */
  watchedCommitIssued(): void {
    this.#watchedIssued++;
  }
  /** Input: the oldest watched commit settled (after its watcher's work): wakes what waited for it. */
  watchedCommitSettled(): void {
    const settled = ++this.#watchedSettled;
    const waiters = this.#watchedWaiters;
    while (waiters.length > 0 && (waiters[0] as { target: number }).target <= settled)
      (waiters.shift() as { resolve: () => void }).resolve();
    if (settled >= this.#watchedIssued) this.#watchedPromise = undefined;
  }
  /** Input: settles once a server cancel is recorded and handed to the attachment (the finish waits for it). */
  serverCancelSent: Promise<void> = Promise.resolve();
  #graph: SchemaGraph | undefined;

  constructor(record: StreamRecord) {
    this.streamId = record.streamId;
    this.ordinal = record.ordinal;
    this.direction = record.direction;
    this.elementKind = record.elementKind;
    this.elementGraphText = record.elementGraph;
    this.coordinate = record.coordinate;
    this.provisionalRef = record.provisionalRef;
    this.parent = record.parent;
    this.token = record.token;
    this.count = record.count;
    this.outputCommitted = record.count;
    this.fed = record.count;
    this.inputTerminal = record.inputTerminal;
    this.outputTerminal = record.outputTerminal;
  }

  get graph(): SchemaGraph {
    this.#graph ??= storedGraph(this.elementGraphText);
    return this.#graph;
  }

  get terminal(): boolean {
    return this.direction === "input" ? this.inputTerminal !== undefined : this.outputTerminal;
  }
}

/** A stream leaf about to become a stream, before its token exists. */
export interface PendingStream {
  readonly state: StreamState;
  readonly record: NewStream;
  /** A re-run's stream that the run before created and committed: registered already, never written again. */
  readonly stored?: boolean;
}
