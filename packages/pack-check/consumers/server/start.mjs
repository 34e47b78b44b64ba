// Starts the embedded demo server from the installed tarball and prints its URL; stops on SIGTERM.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startEmbeddedServer } from "@golem-stream/server";

const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-pack-data-"));
const server = await startEmbeddedServer({ dataDir, tokens: ["s3cret"], port: 0 });
console.log(`listening ${server.httpUrl}`);
process.on(
  "SIGTERM",
  () =>
    void server.close().then(() => {
      rmSync(dataDir, { recursive: true, force: true });
      process.exit(0);
    }),
);
