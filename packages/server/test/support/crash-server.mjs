// The embedded server in a process of its own, for tests that kill it with
// SIGKILL: `node crash-server.mjs <dataDir> <token>`. Reports `{ url }` over
// IPC once it listens. Runs the built package (turbo builds before tests).
import { startEmbeddedServer } from "../../dist/index.js";

const [dataDir, token] = process.argv.slice(2);
const server = await startEmbeddedServer({ port: 0, host: "127.0.0.1", dataDir, tokens: [token] });
process.send({ url: server.url });
