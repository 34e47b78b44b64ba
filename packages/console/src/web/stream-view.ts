/**
 * One output stream on the page: its name, state, progress (items, bytes,
 * rate) and content — text items as they arrive, binary items each with a
 * download link, a byte stream as a running size with a download link.
 * Holds every item shown, so the checkpoint can store exactly those its
 * cursors cover.
 *
 * Binary items are the agent's bytes, and their MIME type is the agent's
 * word: rendered in the console's origin, a `text/html` item would run as the
 * console, with its token. So every item is offered as a download only: a
 * Blob of type `application/octet-stream` behind a link with a `download`
 * name, never a URL of the agent's type and never shown inline. The type the
 * agent gave is shown as text.
 */
import type { OutputStream } from "@golem-stream/client";
import { formatBytes } from "./render.js";
import type { StoredItem, StreamKind, StreamRecord } from "./run-store.js";

const RATE_WINDOW_MS = 3000;
/** The type of every Blob the page offers: bytes to save, never a document to render. */
const DOWNLOAD_TYPE = "application/octet-stream";

export class StreamView {
  readonly record: StreamRecord;
  /** Every item shown, stored or not yet: `items.length` is what a cursor noted now covers. */
  readonly items: StoredItem[] = [];
  /** The client's handle, once this page reads the stream. */
  stream: OutputStream | undefined;
  readonly element: HTMLElement;
  #bytes = 0;
  readonly #name: HTMLElement;
  readonly #state: HTMLElement;
  readonly #progress: HTMLElement;
  readonly #list: HTMLOListElement;
  readonly #download: HTMLAnchorElement;
  readonly #samples: { at: number; items: number; bytes: number }[] = [];
  #drawPending = false;
  #objectUrl: string | undefined;
  /** The binary items' Blob URLs, revoked by `dispose`. */
  readonly #itemUrls: string[] = [];

  constructor(record: StreamRecord, restored: readonly StoredItem[]) {
    this.record = record;
    this.element = document.createElement("div");
    this.element.className = "stream";
    this.element.dataset["stream"] = record.token.slice(-12);
    const head = document.createElement("div");
    head.className = "stream-head";
    this.#name = span("stream-name");
    this.#state = span("stream-state");
    this.#progress = span("progress");
    this.#download = document.createElement("a");
    this.#download.textContent = "download";
    this.#download.href = "#";
    this.#download.hidden = true;
    this.#download.type = DOWNLOAD_TYPE;
    // The Blob URL is made when asked for: the bytes received so far.
    this.#download.addEventListener("click", () => this.#prepareDownload());
    head.append(this.#name, this.#state, this.#progress, this.#download);
    this.#list = document.createElement("ol");
    this.#list.className = "items";
    this.#list.start = 0;
    this.element.append(head, this.#list);
    for (const item of restored) this.add(item);
    this.setState(record.ended === undefined ? "open" : record.ended === "ok" ? "ended" : "failed");
    this.#draw();
  }

  get received(): number {
    return this.items.length;
  }

  setLabel(label: string): void {
    this.record.label = label;
    this.#draw();
  }

  setState(state: "open" | "ended" | "failed", detail?: string): void {
    if (state !== "open") this.record.ended = state === "ended" ? "ok" : "failed";
    this.#state.textContent = detail === undefined ? state : `${state}: ${detail}`;
    this.#state.className = `stream-state ${state}`;
  }

  /** Shows one item (synchronously: the consumer asks for the next one right after). */
  add(item: StoredItem): void {
    this.items.push(item);
    // Follow new items while the list is scrolled to its end.
    const list = this.#list;
    const following = list.scrollTop + list.clientHeight >= list.scrollHeight - 4;
    const kind: StreamKind = typeof item === "string" ? "values" : item instanceof Uint8Array ? "bytes" : "binary";
    this.record.kind ??= kind;
    const size =
      typeof item === "string"
        ? new TextEncoder().encode(item).byteLength
        : item instanceof Uint8Array
          ? item.byteLength
          : item.bytes.byteLength;
    this.#bytes += size;
    if (typeof item === "string") this.#list.append(li(item));
    else if (!(item instanceof Uint8Array)) {
      const entry = li(`${formatBytes(size)}${item.mimeType === undefined ? "" : ` ${item.mimeType}`} `);
      const link = document.createElement("a");
      link.textContent = "download";
      link.href = URL.createObjectURL(new Blob([item.bytes as Uint8Array<ArrayBuffer>], { type: DOWNLOAD_TYPE }));
      link.download = `item-${this.items.length - 1}`;
      link.type = DOWNLOAD_TYPE; // the hint agrees with the Blob
      this.#itemUrls.push(link.href);
      entry.append(link);
      this.#list.append(entry);
    } else this.#download.hidden = false;
    if (following) list.scrollTop = list.scrollHeight;
    this.#scheduleDraw();
  }

  bytesOf(from: number, to: number): number {
    let total = 0;
    for (const item of this.items.slice(from, to))
      total += typeof item === "string" ? 0 : item instanceof Uint8Array ? item.byteLength : item.bytes.byteLength;
    return total;
  }

  #prepareDownload(): void {
    if (this.#objectUrl !== undefined) URL.revokeObjectURL(this.#objectUrl);
    this.#objectUrl = URL.createObjectURL(new Blob(this.items as Uint8Array<ArrayBuffer>[], { type: DOWNLOAD_TYPE }));
    this.#download.href = this.#objectUrl;
    this.#download.download = `${this.record.label.replace(/[^\w.-]+/g, "_") || "stream"}.bin`;
  }

  #scheduleDraw(): void {
    if (this.#drawPending) return;
    this.#drawPending = true;
    requestAnimationFrame(() => {
      this.#drawPending = false;
      this.#draw();
    });
  }

  #draw(): void {
    const now = performance.now();
    this.#samples.push({ at: now, items: this.items.length, bytes: this.#bytes });
    while (this.#samples.length > 2 && now - this.#samples[0]!.at > RATE_WINDOW_MS) this.#samples.shift();
    const first = this.#samples[0]!;
    const seconds = (now - first.at) / 1000;
    const rate =
      seconds > 0.2 && this.record.ended === undefined
        ? ` · ${((this.items.length - first.items) / seconds).toFixed(1)} items/s, ${formatBytes((this.#bytes - first.bytes) / seconds)}/s`
        : "";
    const unit = this.record.kind === "bytes" ? "batches" : "items";
    this.#name.textContent = this.record.label;
    this.#progress.textContent = `${this.items.length} ${unit} · ${formatBytes(this.#bytes)}${rate}`;
  }

  /** Lets go of the Blob URLs (the page no longer shows this stream). */
  dispose(): void {
    for (const url of this.#itemUrls.splice(0)) URL.revokeObjectURL(url);
    if (this.#objectUrl !== undefined) URL.revokeObjectURL(this.#objectUrl);
    this.#objectUrl = undefined;
  }

  /** Redraws the rate once the stream is quiet or over. */
  tick(): void {
    this.#draw();
  }
}

function span(className: string): HTMLSpanElement {
  const node = document.createElement("span");
  node.className = className;
  return node;
}

function li(text: string): HTMLLIElement {
  const node = document.createElement("li");
  node.textContent = text;
  return node;
}
