/**
 * Live progress on stderr: one line per stream with what it moved, its rate
 * and the elapsed time; for an input of known size (a regular file on
 * stdin, as `pv` finds out) also the percentage and the time left.
 *
 * Drawn only when stderr is a terminal and stdout is not, as curl does:
 * when both are the same terminal, redrawn bars and output lines would be
 * glued together. Wrapping is never switched off (the bars cut their own
 * lines to the terminal's width instead), so long output lines stay whole.
 * Otherwise every call is a no-op, and pipes, files and CI logs stay clean.
 */
import cliProgress from "cli-progress";
import type { CliIo } from "./cli-io.js";
import { describeProgress } from "./progress-line.js";
import type { ProgressState } from "./progress-line.js";

export interface StreamProgress {
  /** Counts `items` logical items carrying `bytes` payload bytes. */
  add(items: number, bytes: number): void;
  finish(note: string): void;
}

export interface StreamProgressOptions {
  /** `bytes`: a byte stream (counting items would count bytes twice); `items`: anything else. */
  readonly unit: "bytes" | "items";
  /** Bytes this stream will carry, when known in advance. */
  readonly totalBytes?: number;
}

export interface Progress {
  stream(label: string, direction: "in" | "out", options?: StreamProgressOptions): StreamProgress;
  /** Removes the bars, so later stderr lines are not mixed into them. */
  stop(): void;
}

const SILENT_STREAM: StreamProgress = { add: () => undefined, finish: () => undefined };
export const SILENT_PROGRESS: Progress = { stream: () => SILENT_STREAM, stop: () => undefined };

/** Redraws per second: often enough to look live, rarely enough to cost nothing. */
const FRAMES_PER_SECOND = 4;

export function createProgress(io: CliIo, enabled: boolean, now: () => number = Date.now): Progress {
  if (!enabled || io.stderr.isTTY !== true || io.stdout.isTTY === true) return SILENT_PROGRESS;
  const bars = new cliProgress.MultiBar({
    stream: io.stderr,
    format: (_options, _params, payload: { state: ProgressState }) => describeProgress(payload.state, now()),
    hideCursor: true,
    clearOnComplete: false,
    fps: FRAMES_PER_SECOND,
    // Never send the "wrapping off" sequence; lines longer than the terminal are cut by the bar itself.
    linewrap: true,
  });
  let stopped = false;
  return {
    stream(label, direction, options = { unit: "items" }) {
      const state: ProgressState = {
        arrow: direction === "in" ? "→" : "←",
        label,
        unit: options.unit,
        ...(options.totalBytes === undefined ? {} : { totalBytes: options.totalBytes }),
        items: 0,
        bytes: 0,
        startedAt: now(),
        note: undefined,
        finishedAt: undefined,
      };
      const bar = bars.create(0, 0, { state });
      return {
        add(items, bytes) {
          state.items += items;
          state.bytes += bytes;
          bar.update({ state });
        },
        finish(note) {
          state.note = note;
          state.finishedAt ??= now();
          bar.update({ state });
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
