/**
 * The text of one progress line. Pure (the clock is a parameter), so every
 * shape of the line is tested without a terminal.
 */
import { printable } from "./printable.js";

export interface ProgressState {
  readonly arrow: string;
  readonly label: string;
  readonly unit: "bytes" | "items";
  readonly totalBytes?: number;
  items: number;
  bytes: number;
  readonly startedAt: number;
  /** `done`, `failed`…; undefined while the stream runs. */
  note: string | undefined;
  finishedAt: number | undefined;
}

/**
 * `→ data | 12.0 MiB / 48.0 MiB 25% | 4.0 MiB/s | 0:03 | ETA 0:09`, or for
 * items `← $ | 1200 items, 23.4 KiB | 400 items/s | 0:03 | done`.
 */
export function describeProgress(state: ProgressState, now: number): string {
  const end = state.finishedAt ?? now;
  const seconds = Math.max(0, end - state.startedAt) / 1000;
  // A stream's name holds the result's field names, which the server chose.
  const parts = [`${state.arrow} ${printable(state.label)}`];
  if (state.unit === "bytes") {
    const total = state.totalBytes;
    parts.push(
      total === undefined
        ? formatBytes(state.bytes)
        : `${formatBytes(state.bytes)} / ${formatBytes(total)} ${total === 0 ? 100 : Math.min(100, Math.floor((state.bytes / total) * 100))}%`,
    );
    parts.push(seconds > 0 ? `${formatBytes(state.bytes / seconds)}/s` : "-/s");
  } else {
    parts.push(`${state.items} item${state.items === 1 ? "" : "s"}, ${formatBytes(state.bytes)}`);
    parts.push(seconds > 0 ? `${formatRate(state.items / seconds)} items/s` : "- items/s");
  }
  parts.push(formatClock(seconds));
  if (state.note !== undefined) {
    parts.push(state.note);
  } else if (state.totalBytes !== undefined && state.bytes > 0 && state.bytes < state.totalBytes && seconds > 0) {
    parts.push(`ETA ${formatClock(((state.totalBytes - state.bytes) * seconds) / state.bytes)}`);
  }
  return ` ${parts.join(" | ")}`;
}

export function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${Math.round(bytes)} B` : `${value.toFixed(1)} ${units[unit]}`;
}

function formatRate(perSecond: number): string {
  return perSecond >= 100 ? String(Math.round(perSecond)) : perSecond.toFixed(1);
}

/** `0:07`, `12:34`, `1:02:03`. */
export function formatClock(seconds: number): string {
  const whole = Math.floor(seconds);
  const h = Math.floor(whole / 3600);
  const m = Math.floor((whole % 3600) / 60);
  const s = String(whole % 60).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${s}` : `${m}:${s}`;
}
