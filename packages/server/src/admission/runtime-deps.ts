/**
 * Everything the server hands `SessionRuntime` and the first-message rules:
 * what each live session needs (`SessionDeps`, invocation/session-deps.ts),
 * with the admission's whole token service and stored-bytes table where the
 * sessions see only the ports they use. Declared here, in the admission,
 * so nothing below it imports the admission for it (docs/architecture.md,
 * the runtime's order).
 */
import type { SessionDeps } from "../invocation/session-deps.js";
import type { TokenService } from "../admission/token-service.js";
import type { StoredBytesTable } from "../admission/stored-bytes.js";

export interface RuntimeDeps extends SessionDeps {
  /** Mints and checks the session, stream and cursor tokens (the first-message rules use all of it). */
  readonly tokens: TokenService;
  /** Payload bytes each principal keeps in the store (`limits.maxStoredBytesPerPrincipal`): a start checks its room. */
  readonly storedBytes: StoredBytesTable;
}
