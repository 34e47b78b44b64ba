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
  // Colours only on a terminal, and never when NO_COLOR is set to anything but "" (no-color.org).
  const colorize = io.stderr.isTTY === true && (io.env["NO_COLOR"] ?? "") === "";
  const prettify = pretty ? PinoPretty.prettyFactory({ colorize, translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname" }) : undefined;
  const destination = { write: (line: string) => void io.stderr.write(prettify === undefined ? line : escapeUnquoted(prettify(line))) };
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

/**
 * pino-pretty writes each field as JSON, which escapes the C0 controls a client or an agent may
 * have put in a name or an error's text, but leaves DEL, the C1 controls (U+009B is a terminal's
 * CSI, as ESC [ is) and the bidi overrides and isolates (which show the text after them reversed)
 * as they are. It writes none of them itself (its colours are ESC sequences, left alone), so every
 * one in its line came from a field, and is written as JSON would escape it (`\u009b`).
 */
const UNQUOTED_CONTROLS = /[\u007f-\u009f\u202a-\u202e\u2066-\u2069]/gu;

function escapeUnquoted(line: string): string {
  return line.replace(UNQUOTED_CONTROLS, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** Errors as their message (pino would serialise a stack), bigints as decimal strings. */
function plain(fields: Readonly<Record<string, unknown>> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields ?? {})) {
    out[key] = value instanceof Error ? value.message : typeof value === "bigint" ? value.toString() : value;
  }
  return out;
}
