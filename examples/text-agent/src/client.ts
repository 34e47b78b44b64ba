/**
 * The typed client: `node dist/client.js <file>` streams the file to the
 * `text` agent twice, printing each line's counts as they come back, then
 * the file's statistics. The server is $GOLEM_STREAM_URL (default
 * http://127.0.0.1:8080) with the token $GOLEM_STREAM_TOKEN (default
 * dev-token-0123456789, what `pnpm serve` accepts).
 */
import { createReadStream, statSync } from "node:fs";
import { createClient } from "@golem-stream/client";
import { APPLICATION, ENVIRONMENT, textContract } from "./contract.js";

const file = process.argv[2];
if (file === undefined || !statSync(file, { throwIfNoEntry: false })?.isFile()) {
  process.stderr.write(`usage: node dist/client.js <file>${file === undefined ? "" : ` (${file} is not a file)`}\n`);
  process.exit(2);
}
const client = createClient({
  url: process.env["GOLEM_STREAM_URL"] ?? "http://127.0.0.1:8080",
  token: process.env["GOLEM_STREAM_TOKEN"] ?? "dev-token-0123456789",
});
// `connect` checks the contract against the server's catalogue before anything is sent.
const agent = await client.connect(textContract, { application: APPLICATION, environment: ENVIRONMENT, constructor: { ignoreCase: true } });

// A Node stream is an async iterable of bytes: it uploads as the lines come back.
for await (const line of await agent.lines({ text: createReadStream(file) })) {
  process.stdout.write(`${String(line.number).padStart(4)} | ${String(line.words).padStart(3)} words | ${line.text}\n`);
}
const stats = await agent.stats({ text: createReadStream(file), top: 3 });
process.stdout.write(`${stats.lines} lines, ${stats.words} words, ${stats.bytes} bytes\n`);
process.stdout.write(`most frequent: ${stats.topWords.map(({ word, count }) => `${word} (${count})`).join(", ")}\n`);
