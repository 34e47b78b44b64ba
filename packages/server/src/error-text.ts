/**
 * The text of an error for a log line. An agent may throw anything, and
 * `String` itself throws for a value with no string form (an object with a
 * null prototype, one whose `toString` throws, a revoked proxy): a log line
 * about a failure must not become a second failure, which went unhandled
 * and stopped the process.
 */
export function errorText(error: unknown): string {
  try {
    return String(error);
  } catch {
    try {
      return Object.prototype.toString.call(error);
    } catch {
      return "a value with no text form";
    }
  }
}

/**
 * `errorText` of the error and of up to three causes: a converter's public
 * error ("value is not well-formed") says nothing of the agent's own
 * mistake, which its cause names.
 */
export function errorTextWithCauses(error: unknown): string {
  let text = errorText(error);
  try {
    let cause = error instanceof Error ? error.cause : undefined;
    for (let depth = 0; depth < 3 && cause !== undefined; depth++) {
      text += ` (caused by ${errorText(cause)})`;
      cause = cause instanceof Error ? cause.cause : undefined;
    }
  } catch {
    // A cause that cannot be read (a throwing getter) is left out.
  }
  return text;
}
