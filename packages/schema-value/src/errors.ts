/**
 * The three codes this package raises besides `limit-exceeded`. Everything a
 * value or graph can get wrong is a `validation-error` naming its structural
 * path; host-managed and future values are `unsupported-value`; a stream
 * reference at two coordinates is `stream-already-consumed`.
 */
import { ProtocolError } from "@golem-stream/wire";

export function validationError(path: string, message: string): ProtocolError {
  return new ProtocolError("validation-error", `${path}: ${message}`, { path });
}

export function graphError(path: string, message: string): ProtocolError {
  return new ProtocolError("validation-error", `schema graph ${path}: ${message}`, { path });
}

export function limitError(path: string, message: string): ProtocolError {
  return new ProtocolError("limit-exceeded", `${path}: ${message}`, { path });
}

/**
 * Public entry points promise to throw only `ProtocolError`. Anything else
 * escaping the walk (a getter that throws on a caller-built object, stack
 * exhaustion on a pathological caller-built value) becomes a safe public
 * error instead of leaking an engine error.
 */
export function guard<T>(what: string, run: () => T): T {
  try {
    return run();
  } catch (cause) {
    throw publicError(what, cause);
  }
}

/** What `guard` throws for `cause`: the cause itself when it is a `ProtocolError`. */
export function publicError(what: string, cause: unknown): ProtocolError {
  if (cause instanceof ProtocolError) return cause;
  if (cause instanceof RangeError) return new ProtocolError("limit-exceeded", `${what} nests too deeply`, { cause });
  return new ProtocolError("validation-error", `${what} is not well-formed`, { cause });
}

/** Shortens text quoted in an error message without splitting a surrogate pair. */
export function clip(text: string, max = 64): string {
  if (text.length <= max) return text;
  let end = max;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${text.slice(0, end)}...`;
}
