// Starts the embedded demo server from the installed tarball and prints its URL; stops on SIGTERM.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startEmbeddedServer } from "@golem-stream/server";

const server = await startEmbeddedServer({ dataDir: mkdtempSync(join(tmpdir(), "golem-stream-pack-data-")), tokens: ["s3cret"], port: 0 });
console.log(`listening ${server.httpUrl}`);
process.on("SIGTERM", () => void server.close().then(() => process.exit(0)));
