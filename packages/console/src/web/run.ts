/**
 * One invocation on the page: started here, or continued after a reload from
 * the checkpoint in IndexedDB (`client.takeover` with the stored state).
 *
 * Exactly-once display. The client calls `onCheckpoint` with a state whose
 * cursors cover, per stream, the items the consumer has come back from
 * (protocol cursors; an item counts once the consumer asks for the next).
 * This page shows an item synchronously when it arrives and asks for the next
 * at once, and notes, right after each ask, which cursor the stream now
 * retains and how many items it has shown (`#cursors`). At a checkpoint each
 * of the state's cursors therefore names an exact item count, and the state
 * and exactly those items are stored in one transaction. A reloaded page
 * shows the stored items and takes over from the stored cursors, after which
 * the server sends the next item: nothing shown twice, nothing missing.
 *
 * The checkpoint is kept only while a reload may need it: once the
 * invocation has finished and every output has been shown, or when the run
 * is discarded (replaced, signed out), its records are removed from
 * IndexedDB; what stays is the page as it is, until the tab goes. While it is
 * shown, this page holds the run's lock, which keeps other tabs' sweeps off it.
 */
import {
  findStreamTokens,
  isClientError,
  type Client,
  type InvocationResult,
  type InvokeOptions,
  type Invocation,
  type OutputChunk,
  type OutputStream,
  type ResumeState,
} from "@golem-stream/client";
import { decodeSchemaGraph } from "@golem-stream/schema-value";
import type { JsonValue } from "@golem-stream/wire";
import { pointerName, renderItem } from "./render.js";
import { holdRun, releaseRun } from "./run-lock.js";
import { currentRunId, deleteRun, loadRun, saveRun, setCurrentRunId, type RunRecord, type StoredItem } from "./run-store.js";
import { StreamView } from "./stream-view.js";

export interface RunElements {
  readonly title: HTMLElement;
  readonly status: HTMLElement;
  readonly streams: HTMLElement;
  readonly result: HTMLElement;
  readonly outcome: HTMLElement;
  readonly cancel: HTMLButtonElement;
  readonly resume: HTMLButtonElement;
}

export class Run {
  readonly #record: RunRecord;
  readonly #ui: RunElements;
  readonly #views = new Map<string, StreamView>();
  /** Cursor → the stream it belongs to and how many of its items it covers. */
  readonly #cursors = new Map<string, { stream: string; count: number }>();
  readonly #reading = new WeakSet<OutputStream>();
  /** One per stream this page reads: the outcome is shown once each has shown its last item. */
  readonly #readers: Promise<void>[] = [];
  #call: Invocation | undefined;
  readonly #ticker: ReturnType<typeof setInterval>;
  #discarded = false;
  /** Whether checkpoints are still written: until the run is over or discarded. */
  #storing = true;

  private constructor(record: RunRecord, ui: RunElements, restored: Map<string, StoredItem[]>) {
    this.#record = record;
    this.#ui = ui;
    holdRun(record.id);
    ui.streams.replaceChildren();
    ui.title.textContent = record.title;
    ui.result.textContent = record.result ?? "—";
    for (const stream of Object.values(record.streams)) this.#viewFor(stream.token, restored.get(stream.token) ?? []);
    for (const [cursor, known] of Object.entries(record.cursors)) this.#cursors.set(cursor, known);
    this.#ticker = setInterval(() => this.#views.forEach((view) => view.tick()), 1000);
    ui.cancel.onclick = () => void this.#call?.cancel("cancelled in the console");
    // The reloaded page continues from the checkpoint: the same path as a reload.
    ui.resume.onclick = () => location.reload();
  }

  /** Starts an invocation and shows it; the run becomes this tab's current one. */
  static async start(client: Client, options: Omit<InvokeOptions, "onCheckpoint">, title: string, ui: RunElements): Promise<Run> {
    const record: RunRecord = { id: crypto.randomUUID(), title, state: undefined, cursors: {}, streams: {} };
    await saveRun(record);
    setCurrentRunId(record.id);
    const run = new Run(record, ui, new Map());
    run.#attach(client.invoke({ ...options, onCheckpoint: (state) => run.#checkpoint(state) }), "starting");
    return run;
  }

  /** Shows a stored run and, unless it is over, takes it over from its checkpoint. */
  static async restore(client: Client, id: string, ui: RunElements): Promise<Run | undefined> {
    const stored = await loadRun(id);
    if (stored === undefined) return undefined;
    const run = new Run(stored.record, ui, stored.items);
    const { outcome, state } = stored.record;
    // Over before the page went (it could not remove it): shown once more, then removed.
    if (outcome !== undefined) await run.#end(outcome);
    else if (state === undefined) await run.#end({ ok: false, text: "the page was closed before the invocation was started; nothing ran" });
    else run.#attach(client.takeover(state, { onCheckpoint: (next) => run.#checkpoint(next) }), "resuming from the checkpoint");
    return run;
  }

  /** Forgets the run (a new one replaces it, or the user signed out), cancelling it if it still runs. */
  async discard(): Promise<void> {
    clearInterval(this.#ticker);
    // From now on this run touches neither the page (another run owns it) nor the store.
    this.#discarded = true;
    if (this.#record.outcome === undefined) void this.#call?.cancel("replaced in the console");
    await this.#forget();
    this.#views.forEach((view) => view.dispose());
  }

  /** Stops writing checkpoints and removes the run's records (after the writes under way) and its lock. */
  async #forget(): Promise<void> {
    this.#storing = false;
    await this.written();
    try {
      await deleteRun(this.#record.id);
    } finally {
      releaseRun(this.#record.id);
      if (currentRunId() === this.#record.id) setCurrentRunId(undefined);
    }
  }

  #attach(call: Invocation, status: string): void {
    this.#call = call;
    const ui = this.#ui;
    ui.status.textContent = status;
    ui.outcome.textContent = "running";
    ui.cancel.hidden = false;
    ui.resume.hidden = true;
    call.on("stream", (stream) => this.#readers.push(this.#read(stream)));
    call.on(
      "accepted",
      (event) => !this.#discarded && (ui.status.textContent = `running (${event.operation} accepted${event.replayed ? ", replayed" : ""})`),
    );
    call.on("reconnecting", (event) => {
      if (this.#discarded) return;
      ui.status.textContent = `connection lost (${event.cause}); reconnecting in ${event.delayMs} ms, try ${event.failures} of ${event.maxAttempts}`;
    });
    call.result.then(
      (result) => this.#showResult(result),
      () => undefined, // reported by `finished`
    );
    // `finished` can come while items are still queued for the readers: the outcome waits for them.
    call.finished.then(
      () => this.#readersDone().then(() => this.#end({ ok: true, text: "success" })),
      (error: unknown) => this.#readersDone().then(() => this.#failed(error)),
    );
  }

  /** Resolves once every stream known (nested ones appear while others are read) has been read to its end. */
  async #readersDone(): Promise<void> {
    for (let seen = -1; seen !== this.#readers.length;) {
      seen = this.#readers.length;
      await Promise.all(this.#readers);
    }
  }

  async #failed(error: unknown): Promise<void> {
    if (this.#discarded) return;
    const text = isClientError(error)
      ? `${error.kind}${error.code === undefined ? "" : ` (${error.code})`}: ${error.message}`
      : String(error);
    if (isClientError(error) && (error.kind === "connection-lost" || error.kind === "checkpoint-failed")) {
      // Not an outcome: the invocation may still run on the server. The checkpoint continues it.
      this.#ui.status.textContent = `stopped: ${text}`;
      this.#ui.outcome.textContent = "unknown: the checkpoint can continue it (Resume)";
      this.#ui.cancel.hidden = true;
      this.#ui.resume.hidden = false;
      addEventListener("online", () => location.reload(), { once: true });
      return;
    }
    await this.#end({ ok: false, text });
  }

  /**
   * The invocation is over and every output shown: nothing is left for a
   * reload to resume, so the records go before the outcome is shown (a page
   * that shows the outcome keeps nothing in IndexedDB).
   */
  async #end(outcome: { ok: boolean; text: string }): Promise<void> {
    if (this.#discarded) return;
    this.#record.outcome = outcome;
    let failure: string | undefined;
    await this.#forget().catch(
      (error: unknown) => (failure = `cannot remove the run from IndexedDB: ${error instanceof Error ? error.message : String(error)}`),
    );
    if (this.#discarded) return;
    this.#showOutcome(outcome);
    if (failure !== undefined) this.#ui.status.textContent = failure;
  }

  #showOutcome(outcome: { ok: boolean; text: string }): void {
    this.#ui.status.textContent = "finished";
    this.#ui.outcome.textContent = outcome.ok ? `success` : `failed: ${outcome.text}`;
    this.#ui.outcome.className = outcome.ok ? "" : "error";
    this.#ui.cancel.hidden = true;
    this.#ui.resume.hidden = true;
    clearInterval(this.#ticker);
    this.#views.forEach((view) => view.tick());
  }

  #showResult(result: InvocationResult): void {
    if (this.#discarded) return;
    if (result.kind === "none") {
      this.#record.result = "(no result)";
    } else {
      const graph = decodeSchemaGraph(result.graph, { streams: "allowed" });
      for (const stream of result.streams) {
        this.#viewFor(stream.streamToken).setLabel(pointerName(graph, graph.root, stream.coordinate ?? "") || "result");
      }
      this.#record.result = renderItem(
        result.value,
        { graph, elementType: graph.root, direct: undefined },
        (token) => this.#views.get(token)?.record.label ?? "?",
      );
    }
    this.#ui.result.textContent = this.#record.result;
  }

  #viewFor(token: string, restored: readonly StoredItem[] = []): StreamView {
    let view = this.#views.get(token);
    if (view === undefined) {
      const record = (this.#record.streams[token] ??= {
        token,
        label: `stream ${this.#views.size + 1}`,
        kind: undefined,
        stored: 0,
        storedBytes: 0,
      });
      view = new StreamView(record, restored);
      this.#views.set(token, view);
      this.#ui.streams.append(view.element);
    }
    return view;
  }

  async #read(stream: OutputStream): Promise<void> {
    if (this.#reading.has(stream)) return;
    this.#reading.add(stream);
    const view = this.#viewFor(stream.streamToken);
    view.stream = stream;
    const iterator = stream[Symbol.asyncIterator]();
    try {
      for (;;) {
        const next = iterator.next();
        // Asking delivered the item shown last: the stream retains its cursor now.
        this.#noteCursor(view);
        const step = await next;
        if (step.done) break;
        view.add(this.#toStored(view, step.value));
      }
      view.setState("ended");
    } catch (error) {
      view.setState("failed", isClientError(error) ? error.message : String(error));
    }
    view.tick();
  }

  #noteCursor(view: StreamView): void {
    const cursor = view.stream?.retainedCursor;
    if (cursor !== undefined && !this.#cursors.has(cursor)) this.#cursors.set(cursor, { stream: view.record.token, count: view.received });
  }

  #toStored(view: StreamView, chunk: OutputChunk): StoredItem {
    if (chunk instanceof Uint8Array) return chunk;
    if ("bytes" in chunk) return chunk.mimeType === undefined ? { bytes: chunk.bytes } : { bytes: chunk.bytes, mimeType: chunk.mimeType };
    // Streams announced by this item are named after it.
    const schema = view.stream?.schema;
    for (const leaf of findStreamTokens(chunk as unknown as JsonValue)) {
      const inner = pointerName(schema?.graph, schema?.elementType, leaf.coordinate);
      this.#viewFor(leaf.streamToken).setLabel(`${view.record.label}[${view.received}]${inner === "" ? "" : `.${inner}`}`);
    }
    return renderItem(chunk, schema, (token) => this.#views.get(token)?.record.label ?? "?");
  }

  /** The client's checkpoint: the state, with exactly the items its cursors cover, in one transaction. */
  #checkpoint(state: ResumeState): Promise<void> {
    const cursors: Record<string, { stream: string; count: number }> = {};
    const items: { stream: string; index: number; item: StoredItem }[] = [];
    for (const cursor of state.outputCursors) {
      let known = this.#cursors.get(cursor);
      if (known === undefined) {
        // Retained after the last note (a stream's terminal, retained as `next()` ends): nothing was shown since.
        const view = [...this.#views.values()].find((candidate) => candidate.stream?.retainedCursor === cursor);
        if (view !== undefined) this.#cursors.set(cursor, (known = { stream: view.record.token, count: view.received }));
      }
      // Saving a cursor without its items would lose them after a reload: refuse instead.
      if (known === undefined) return Promise.reject(new Error("the console cannot tell which items a cursor covers"));
      cursors[cursor] = known;
      const view = this.#viewFor(known.stream);
      for (let index = view.record.stored; index < known.count; index++)
        items.push({ stream: known.stream, index, item: view.items[index]! });
      if (known.count > view.record.stored) {
        view.record.storedBytes += view.bytesOf(view.record.stored, known.count);
        view.record.stored = known.count;
      }
    }
    this.#record.state = state;
    this.#record.cursors = cursors;
    const saved = this.#save(items);
    // The frozen start is stored before it is sent: a reload then retries it instead of losing a run.
    return state.sessionToken === undefined ? saved.then(() => this.written()) : saved;
  }

  /**
   * Stores the record as it is now with `items`, after every earlier save.
   * Writes do not hold the stream back: while one is under way, later
   * checkpoints are merged into the next (the newest record, every new
   * item), so IndexedDB's pace never becomes the stream's. Each write is one
   * transaction, so whatever a reload finds is consistent; a checkpoint not
   * yet written only means its items come again from the server.
   */
  #save(items: { stream: string; index: number; item: StoredItem }[] = []): Promise<void> {
    if (!this.#storing) return Promise.resolve();
    if (this.#writeFailure !== undefined) return Promise.reject(this.#writeFailure);
    this.#pending.push(...items);
    this.#pendingRecord = structuredClone(this.#record);
    this.#writing ??= this.#flush();
    return Promise.resolve();
  }

  #pending: { stream: string; index: number; item: StoredItem }[] = [];
  #pendingRecord: RunRecord | undefined;
  #writing: Promise<void> | undefined;
  #writeFailure: Error | undefined;

  async #flush(): Promise<void> {
    while (this.#pendingRecord !== undefined && this.#writeFailure === undefined) {
      const record = this.#pendingRecord;
      const items = this.#pending;
      this.#pendingRecord = undefined;
      this.#pending = [];
      try {
        await saveRun(record, items);
      } catch (error) {
        // The next checkpoint fails the call (checkpoint-failed): what is stored stays consistent.
        this.#writeFailure = new Error(
          `cannot store the checkpoint in IndexedDB: ${error instanceof Error ? error.message : String(error)}`,
        );
        this.#ui.status.textContent = this.#writeFailure.message;
      }
    }
    this.#writing = undefined;
  }

  /** Resolves once everything saved so far is written. */
  async written(): Promise<void> {
    while (this.#writing !== undefined) await this.#writing;
  }
}
