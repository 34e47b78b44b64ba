/**
 * A catalogue a server cannot start on: its message names the part at fault
 * (`application "text": environment "default": agent type "words": method
 * "count": parameters must be a record …`), one line, never a value.
 */
export class CatalogueError extends Error {
  override readonly name = "CatalogueError";
  /** Stable, for code that tells this refusal from other start-up failures. */
  readonly code = "invalid-catalogue";
}
