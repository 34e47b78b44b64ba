/**
 * Live progress on stderr: one line per stream with its items and bytes.
 * Drawn only when stderr is a terminal (and not disabled), so pipes, files
 * and CI logs stay clean; otherwise every call is a no-op.
 */
import cliProgress from "cli-progress";
import type { CliIo } from "./cli-io.js";

export interface StreamProgress {
  /** Counts `items` logical items carrying `bytes` payload bytes. */
  add(items: number, bytes: number): void;
  finish(note: string): void;
}

export interface Progress {
  stream(label: string, direction: "in" | "out"): StreamProgress;
  /** Removes the bars, so later stderr lines are not mixed into them. */
  stop(): void;
}

const SILENT_STREAM: StreamProgress = { add: () => undefined, finish: () => undefined };
export const SILENT_PROGRESS: Progress = { stream: () => SILENT_STREAM, stop: () => undefined };

export function createProgress(io: CliIo, enabled: boolean): Progress {
  if (!enabled || io.stderr.isTTY !== true) return SILENT_PROGRESS;
  const bars = new cliProgress.MultiBar({
    stream: io.stderr,
    format: " {direction} {label} | {items} items | {size} {note}",
    hideCursor: true,
    clearOnComplete: false,
    fps: 8,
    autopadding: true,
  });
  let stopped = false;
  return {
    stream(label, direction) {
      let items = 0;
      let bytes = 0;
      const bar = bars.create(0, 0, { direction: direction === "in" ? "→" : "←", label, items: 0, size: formatBytes(0), note: "" });
      return {
        add(moreItems, moreBytes) {
          items += moreItems;
          bytes += moreBytes;
          bar.update({ items, size: formatBytes(bytes) });
        },
        finish(note) {
          bar.update({ items, size: formatBytes(bytes), note });
        },
      };
    },
    stop() {
      if (stopped) return;
      stopped = true;
      bars.stop();
    },
  };
}

export function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`;
}
