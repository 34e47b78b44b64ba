/**
 * The server's log on stderr, one line per event:
 * `2026-11-30T10:00:00.000Z info  message key=value ...`.
 * `--log-level` hides the less important levels. Values are printed as JSON
 * so that a line is unambiguous to parse; the server never hands tokens or
 * keys to its logger.
 */
import type { LogLevel } from "../program.js";
import type { CliIo } from "./cli-io.js";

export interface CliLogger {
  debug(message: string, fields?: Readonly<Record<string, unknown>>): void;
  info(message: string, fields?: Readonly<Record<string, unknown>>): void;
  warn(message: string, fields?: Readonly<Record<string, unknown>>): void;
  error(message: string, fields?: Readonly<Record<string, unknown>>): void;
}

const SEVERITY: Record<LogLevel, number> = { error: 0, warn: 1, info: 2, debug: 3 };

export function createLogger(io: CliIo, level: LogLevel, now: () => Date = () => new Date()): CliLogger {
  const write = (at: LogLevel) => (message: string, fields?: Readonly<Record<string, unknown>>) => {
    if (SEVERITY[at] > SEVERITY[level]) return;
    const parts = [now().toISOString(), at.padEnd(5), message];
    for (const [key, value] of Object.entries(fields ?? {})) parts.push(`${key}=${formatValue(value)}`);
    io.stderr.write(`${parts.join(" ")}\n`);
  };
  return { debug: write("debug"), info: write("info"), warn: write("warn"), error: write("error") };
}

function formatValue(value: unknown): string {
  if (value instanceof Error) return JSON.stringify(value.message);
  if (typeof value === "bigint") return value.toString();
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return JSON.stringify(String(value));
  }
}
