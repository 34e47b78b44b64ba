/**
 * The CLI's own version, from its package.json: `--version` prints it and
 * `serve`'s traces carry it as `service.version`.
 */
import { createRequire } from "node:module";

// By the package's own name, not a relative path: the bundled executable runs this from
// dist/chunks/, the library from dist/ (package.json exports "./package.json").
export const CLI_VERSION = (createRequire(import.meta.url)("@golem-stream/cli/package.json") as { version: string }).version;
