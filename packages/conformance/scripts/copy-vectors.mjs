// Copies the protocol's vector files into the package, so that they ship with it
// (`files` cannot reach outside the package directory). Emptied first, so that a vector removed
// from the fixtures is not shipped on from an earlier build.
import { cpSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";

const from = fileURLToPath(new URL("../../../fixtures/stream-session-v1/", import.meta.url));
const to = fileURLToPath(new URL("../vectors/", import.meta.url));
rmSync(to, { recursive: true, force: true });
mkdirSync(to, { recursive: true });
for (const name of readdirSync(from)) cpSync(from + name, to + name);
