/**
 * The server side of the CLI is optional: `@golem-stream/server` (which
 * compiles SQLite's native module on install) and `@golem-stream/store-postgres`
 * are optional peer dependencies, so `npm install -g @golem-stream/cli` for
 * `invoke`/`resume`/`types` installs no native code. `serve` loads them here,
 * on demand, and says how to install whichever is missing. So does
 * `conformance` with `@golem-stream/conformance`.
 */
import { usageError } from "./exit-codes.js";

const MISSING_PACKAGE = /Cannot find (?:package|module) '((?:@[^/']+\/)?[^/']+)/;

/** Imports an optional package; a missing one (or a missing dependency of it) becomes a usage error saying what to install. */
export async function loadOptional<Module>(name: string, purpose: string, load: () => Promise<Module>): Promise<Module> {
  try {
    return await load();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const message = error instanceof Error ? error.message : String(error);
    const missing = code === "ERR_MODULE_NOT_FOUND" ? MISSING_PACKAGE.exec(message)?.[1] : undefined;
    if (missing !== undefined) {
      throw usageError(
        `${purpose} needs ${missing}, which is not installed. Install it beside the CLI: ` +
          `npm install -g ${missing} (or npm install ${missing} in the project that has @golem-stream/cli)`,
        error,
      );
    }
    throw usageError(`cannot load ${name}: ${message}`, error);
  }
}

export function loadServer(): Promise<typeof import("@golem-stream/server")> {
  return loadOptional("@golem-stream/server", "golem-stream serve", () => import("@golem-stream/server"));
}

export function loadStorePostgres(): Promise<typeof import("@golem-stream/store-postgres")> {
  return loadOptional("@golem-stream/store-postgres", "golem-stream serve --store", () => import("@golem-stream/store-postgres"));
}
