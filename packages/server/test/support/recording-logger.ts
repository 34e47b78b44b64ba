/** A test logger that keeps every line's fields and resolves waiters on the event they wait for. */
import type { Logger } from "../../src/index.js";

export function recordingLogger() {
  const lines: Record<string, unknown>[] = [];
  const waiters: { event: string; resolve: () => void }[] = [];
  const note = (_message: string, fields: Readonly<Record<string, unknown>> = {}): void => {
    lines.push({ ...fields });
    for (const waiter of waiters.filter((w) => w.event === fields["event"])) waiter.resolve();
  };
  const logger: Logger = { debug: note, info: note, warn: note, error: note };
  const next = (event: string) => new Promise<void>((resolve) => waiters.push({ event, resolve }));
  return { logger, lines, next, count: (event: string) => lines.filter((line) => line["event"] === event).length };
}
