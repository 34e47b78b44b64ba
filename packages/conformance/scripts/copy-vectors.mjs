// Copies the protocol's vector files into the package, so that they ship with it
// (`files` cannot reach outside the package directory).
import { cpSync, mkdirSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";

const from = fileURLToPath(new URL("../../../fixtures/stream-session-v1/", import.meta.url));
const to = fileURLToPath(new URL("../vectors/", import.meta.url));
mkdirSync(to, { recursive: true });
for (const name of readdirSync(from)) cpSync(from + name, to + name);
