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

/**
 * The stack of the error and of the causes `errorTextWithCauses` names, one
 * after the other (`caused by <its stack>`), for a log line's `stack` field:
 * the line in the agent where the failure began, which the error's text
 * alone does not give. A level without a stack (a thrown string, a plain
 * object) is its `errorText`; `undefined` when no level has one. Never
 * throws, whatever the agent threw.
 */
export function errorStack(error: unknown): string | undefined {
  const parts: string[] = [];
  let found = false;
  let current = error;
  try {
    for (let depth = 0; depth <= 3; depth++) {
      const stack = stackOf(current);
      found ||= stack !== undefined;
      parts.push(`${depth === 0 ? "" : "caused by "}${stack ?? errorText(current)}`);
      current = current instanceof Error ? current.cause : undefined;
      if (current === undefined) break;
    }
  } catch {
    // A cause that cannot be read (a throwing getter, a revoked proxy) is left out.
  }
  return found ? parts.join("\n") : undefined;
}

function stackOf(value: unknown): string | undefined {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return undefined;
  try {
    const stack: unknown = (value as { stack?: unknown }).stack;
    return typeof stack === "string" && stack !== "" ? stack : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The fields a log line about a failure gives its error: `error`, its text
 * and its causes' (`errorTextWithCauses`), and `stack` when it has one
 * (`errorStack`).
 *
 * The stack goes on the line at every level, not only at debug: an operator
 * who serves agents of their own needs it to find the line that failed, and
 * a failure that shows up once in production cannot be asked to happen again
 * with debug on. It is no secret: the log is the operator's own, and the code
 * it points into is theirs too. Only the log has it: a client learns nothing
 * of an agent's error but the public reason (invocation/failure-outcome.ts).
 */
export function errorLogFields(error: unknown): { readonly error: string; readonly stack?: string } {
  const stack = errorStack(error);
  return stack === undefined ? { error: errorTextWithCauses(error) } : { error: errorTextWithCauses(error), stack };
}
