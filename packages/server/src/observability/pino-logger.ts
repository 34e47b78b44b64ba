/**
 * The server's `Logger` is console-like (`info(message, fields)`); pino's
 * methods take the fields first (`info(fields, message)`). `loggerFromPino`
 * adapts one to the other, so a pino logger (or a child of one) writes each
 * event as one JSON line with its fields at the top level.
 */
import type { Logger } from "../options.js";

/** The part of a pino logger the adapter uses. */
export interface PinoLike {
  debug(fields: object, message: string): void;
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export function loggerFromPino(pino: PinoLike): Logger {
  return {
    debug: (message, fields) => pino.debug({ ...fields }, message),
    info: (message, fields) => pino.info({ ...fields }, message),
    warn: (message, fields) => pino.warn({ ...fields }, message),
    error: (message, fields) => pino.error({ ...fields }, message),
  };
}
