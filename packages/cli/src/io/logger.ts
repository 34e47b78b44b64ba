/**
 * The server's log on stderr, through pino: one JSON object per line
 * (`{"level":"info","time":"...","msg":"session started","event":"session.start",...}`),
 * or, when stderr is a terminal, the same events made readable by
 * pino-pretty. `--log-level` hides the less important levels; `--log-format`
 * overrides the choice between the two. The server never hands tokens or
 * keys to its logger (docs/operations.md lists what each event carries).
 */
import { pino, type Logger as PinoLogger } from "pino";
import PinoPretty from "pino-pretty";
import type { LogFormat, LogLevel } from "../options.js";
import type { CliIo } from "./cli-io.js";

export interface CliLogger {
  debug(message: string, fields?: Readonly<Record<string, unknown>>): void;
  info(message: string, fields?: Readonly<Record<string, unknown>>): void;
  warn(message: string, fields?: Readonly<Record<string, unknown>>): void;
  error(message: string, fields?: Readonly<Record<string, unknown>>): void;
}

export function createLogger(io: CliIo, level: LogLevel, now: () => Date = () => new Date(), format: LogFormat = "auto"): CliLogger {
  const pretty = format === "pretty" || (format === "auto" && io.stderr.isTTY === true);
  const prettify = pretty
    ? PinoPretty.prettyFactory({ colorize: io.stderr.isTTY === true, translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname" })
    : undefined;
  const destination = { write: (line: string) => void io.stderr.write(prettify === undefined ? line : prettify(line)) };
  const logger: PinoLogger = pino(
    {
      level,
      base: undefined,
      // Level names rather than numbers: the lines are read by people and by log shippers alike.
      formatters: { level: (label) => ({ level: label }) },
      timestamp: () => `,"time":"${now().toISOString()}"`,
    },
    destination,
  );
  const write =
    (at: LogLevel) =>
    (message: string, fields?: Readonly<Record<string, unknown>>): void =>
      logger[at](plain(fields), message);
  return { debug: write("debug"), info: write("info"), warn: write("warn"), error: write("error") };
}

/** Errors as their message (pino would serialise a stack), bigints as decimal strings. */
function plain(fields: Readonly<Record<string, unknown>> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields ?? {})) {
    out[key] = value instanceof Error ? value.message : typeof value === "bigint" ? value.toString() : value;
  }
  return out;
}
