/**
 * One output stream on the page, in memory: what it counts (items, batches, bytes), what it shows
 * for each kind of item, and its state line.
 */
import { expect, it, vi } from "vitest";
import { StreamView } from "../src/web/stream-view.js";
import type { StreamRecord } from "../src/web/run-store.js";

const record = (over: Partial<StreamRecord> = {}): StreamRecord => ({
  token: "gai1_abcdefghijklmnop",
  label: "out",
  kind: undefined,
  stored: 0,
  storedBytes: 0,
  ...over,
});
const text = (view: StreamView, selector: string): string | null | undefined => view.element.querySelector(selector)?.textContent;

it("text items are listed as they arrive and counted in items and UTF-8 bytes", () => {
  const view = new StreamView(record(), []);
  view.add("é");
  view.add("ab");
  view.tick();
  expect(view.record.kind).toBe("values");
  expect(view.received).toBe(2);
  expect(Array.from(view.element.querySelectorAll("li")).map((li) => li.textContent)).toEqual(["é", "ab"]);
  expect(text(view, ".progress")).toBe("2 items · 4 B");
  expect(text(view, ".stream-name")).toBe("out");
  expect(view.element.dataset["stream"]).toBe("efghijklmnop");
  expect(view.bytesOf(0, 2)).toBe(0);
});

it("a byte stream counts batches and offers one download of everything received", () => {
  const view = new StreamView(record(), [new Uint8Array(1024), new Uint8Array(512)]);
  expect(view.record.kind).toBe("bytes");
  expect(text(view, ".progress")).toBe("2 batches · 1.5 KiB");
  expect(view.element.querySelectorAll("li")).toHaveLength(0);
  const download = Array.from(view.element.querySelectorAll("a")).find((a) => a.textContent === "download")!;
  expect(download.hidden).toBe(false);
  expect(view.bytesOf(1, 2)).toBe(512);
  expect(view.bytesOf(0, 2)).toBe(1536);
});

it("binary items each get their size, type and a download link", () => {
  const blobs: Blob[] = [];
  const make = vi.spyOn(URL, "createObjectURL").mockImplementation((blob) => (blobs.push(blob as Blob), `blob:${blobs.length}`));
  const view = new StreamView(record({ label: "my file/s" }), []);
  view.add({ bytes: new Uint8Array(3), mimeType: "image/png" });
  view.add({ bytes: new Uint8Array(2048) });
  expect(view.record.kind).toBe("binary");
  const entries = Array.from(view.element.querySelectorAll("li"));
  expect(entries.map((li) => li.firstChild?.textContent)).toEqual(["3 B image/png ", "2.0 KiB "]);
  expect(entries.map((li) => li.querySelector("a")?.download)).toEqual(["item-0", "item-1"]);
  expect(view.bytesOf(0, 2)).toBe(2051);
  // Downloads of bytes whatever type the agent named: never a document of its type in this origin.
  expect(entries.map((li) => li.querySelector("a")?.type)).toEqual(["application/octet-stream", "application/octet-stream"]);
  expect(blobs.map((blob) => blob.type)).toEqual(["application/octet-stream", "application/octet-stream"]);
  const revoke = vi.spyOn(URL, "revokeObjectURL").mockImplementation(() => undefined);
  view.dispose();
  expect(revoke.mock.calls).toEqual([["blob:1"], ["blob:2"]]);
  make.mockRestore();
  revoke.mockRestore();
});

it("shows its state, and a restored record's end", () => {
  const view = new StreamView(record(), []);
  expect(text(view, ".stream-state")).toBe("open");
  view.setState("failed", "source-unavailable");
  expect(text(view, ".stream-state")).toBe("failed: source-unavailable");
  expect(view.record.ended).toBe("failed");
  view.setLabel("renamed");
  expect(text(view, ".stream-name")).toBe("renamed");
  expect(text(new StreamView(record({ ended: "ok" }), []), ".stream-state")).toBe("ended");
});
