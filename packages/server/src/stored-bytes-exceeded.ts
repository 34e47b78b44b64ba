/**
 * The refusal of the per-principal bound on stored bytes
 * (`limits.maxStoredBytesPerPrincipal`, admission/stored-bytes.ts). A root
 * module, beside `CountLimitError`, because two folders tell it apart: the
 * admission refuses a start with it, and the invocation fails with
 * `limit-exceeded` (not `invocation-failed`) when its item would go past
 * the bound; the invocation sits below the admission and does not import it.
 */
import { CountLimitError } from "./count-limit-error.js";

/**
 * A write that would take its principal past `limits.maxStoredBytesPerPrincipal`:
 * public code `limit-exceeded` (not retryable), and a refused start closes
 * 1002 like every refusal whose message is not itself too large.
 */
export class StoredBytesExceeded extends CountLimitError {
  constructor(limit: number) {
    super(
      `this caller may keep at most ${limit} bytes in the store, and this would go past them; finished sessions give theirs back when their retention ends`,
    );
  }
}
