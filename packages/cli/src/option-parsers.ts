/**
 * Strict parsers of option values: each refuses what it cannot read with
 * commander's `InvalidArgumentError` (a usage error, exit 2) and a message
 * that says what is expected.
 */
import { InvalidArgumentError } from "commander";
import { LIMITS } from "@golem-stream/wire";
import { isZeroDuration, parseDuration } from "./duration.js";

export function parsePort(value: string): number {
  if (!/^(0|[1-9][0-9]{0,4})$/.test(value) || Number(value) > 65535) {
    throw new InvalidArgumentError("a port is an integer from 0 (any free port) to 65535");
  }
  return Number(value);
}

export function parseRetention(value: string): number {
  const ms = parseDuration(value);
  if (ms === undefined) throw new InvalidArgumentError("a duration is a positive whole number and a unit: 90s, 30m, 24h, 7d");
  return ms;
}

/**
 * A strict duration within [min, max] milliseconds (timers cannot wait longer than ~24 days).
 * `range` states the bound with examples inside it (`at most 1h: 500ms, 30s, 5m`), and one
 * message serves both faults, so no value is refused after examples the option would refuse.
 */
export function parseBoundedDuration(min: number, max: number, range: string): (value: string) => number {
  return (value) => {
    const ms = parseDuration(value);
    if (ms === undefined || ms < min || ms > max) {
      throw new InvalidArgumentError(`a duration is a whole number and a unit (ms, s, m, h or d), ${range}`);
    }
    return ms;
  };
}

/**
 * `--idempotency-key`: 1 byte to 1 KiB of UTF-8, as the protocol takes it. Checked here so the
 * message names the flag; the client's own check named its option, `idempotencyKey`.
 */
export function parseIdempotencyKey(value: string): string {
  const bytes = Buffer.byteLength(value, "utf8");
  if (bytes === 0 || bytes > LIMITS.maxIdempotencyKeyBytes) {
    throw new InvalidArgumentError(`an idempotency key is 1 to ${LIMITS.maxIdempotencyKeyBytes} bytes of UTF-8, this one is ${bytes}`);
  }
  return value;
}

export function collect(value: string, previous: readonly string[]): string[] {
  return [...previous, value];
}

/** An origin exactly as a browser sends it: `scheme://host[:port]`, nothing after. */
export function collectOrigin(value: string, previous: readonly string[]): string[] {
  let origin: string | undefined;
  try {
    const url = new URL(value);
    origin = url.protocol === "http:" || url.protocol === "https:" ? url.origin : undefined;
  } catch {
    origin = undefined;
  }
  if (origin !== value)
    throw new InvalidArgumentError("an origin is http(s)://host[:port], as a browser sends it (no path, no trailing slash)");
  return [...previous, value];
}

/** `--store-outage-grace`: a zero (`0`, `0s`, …: no grace) or a duration up to 24h. */
export function parseOutageGrace(value: string): number {
  if (isZeroDuration(value)) return 0;
  const ms = parseDuration(value);
  if (ms === undefined || ms > 86_400_000) throw new InvalidArgumentError("0s, or a duration up to 24h: 500ms, 30s, 2m");
  return ms;
}

export function parseIntervalMs(value: string): number {
  if (isZeroDuration(value)) return 0;
  const ms = parseDuration(value);
  if (ms === undefined || ms > 3_600_000) throw new InvalidArgumentError("0, or a duration up to 1h: 100ms, 2s");
  return ms;
}

/** Milliseconds as a bare whole number, `0` included (off); capped where Node's timers and PostgreSQL's settings stop. */
export function parseTimeoutMs(value: string): number {
  if (!/^(0|[1-9][0-9]{0,9})$/.test(value) || Number(value) > MAX_TIMEOUT_MS) {
    throw new InvalidArgumentError(`milliseconds, a whole number from 0 (off) to ${MAX_TIMEOUT_MS}`);
  }
  return Number(value);
}

/** 2^31 - 1: the largest delay of a Node timer and of PostgreSQL's statement_timeout. */
const MAX_TIMEOUT_MS = 2_147_483_647;

export function parseCount(min: number, max: number): (value: string) => number {
  return (value) => {
    if (!/^(0|[1-9][0-9]{0,9})$/.test(value) || Number(value) < min || Number(value) > max) {
      throw new InvalidArgumentError(`an integer from ${min} to ${max}`);
    }
    return Number(value);
  };
}

/**
 * A byte size: a whole number and an optional binary unit (B, KiB, MiB,
 * GiB, TiB), `16GiB`, `500MiB`, `1048576`. Binary units only, so `K` or
 * `KB` (1000 or 1024?) is refused rather than guessed; at least 1, at most
 * 2^53 - 1 bytes.
 */
export function parseByteSize(value: string): number {
  const match = /^([1-9][0-9]{0,15})(B|KiB|MiB|GiB|TiB)?$/.exec(value);
  const bytes = match === null ? Number.NaN : Number(match[1]) * BYTE_UNITS[match[2] ?? "B"]!;
  if (!Number.isSafeInteger(bytes)) {
    throw new InvalidArgumentError(
      "a size is a positive whole number and an optional unit B, KiB, MiB, GiB or TiB: 512MiB, 16GiB (at most 2^53 - 1 bytes)",
    );
  }
  return bytes;
}

/**
 * A byte size as `parseByteSize` reads it, at most `max` bytes; `range` says the bound and gives
 * examples. One message for both faults, so a value past the bound is not told about 2^53.
 */
export function parseBoundedByteSize(max: number, range: string): (value: string) => number {
  return (value) => {
    let bytes: number | undefined;
    try {
      bytes = parseByteSize(value);
    } catch {
      bytes = undefined;
    }
    if (bytes === undefined || bytes > max) {
      throw new InvalidArgumentError(`a size is a positive whole number and an optional unit B, KiB, MiB or GiB, ${range}`);
    }
    return bytes;
  };
}

const BYTE_UNITS: Readonly<Record<string, number>> = { B: 1, KiB: 2 ** 10, MiB: 2 ** 20, GiB: 2 ** 30, TiB: 2 ** 40 };
