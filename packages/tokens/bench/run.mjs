// Benchmark of @golem-stream/tokens against dist/ (run `npx tsc -p tsconfig.json` first):
//   node bench/run.mjs
//   BENCH_TOKENS_BEFORE=<other build>/packages/tokens/dist/index.js node bench/run.mjs   # its cursor minter in the same rounds
//
// Prints ratios measured side by side in the same run, never absolute
// targets: mint and verify of a typical session token against a bare
// HMAC-SHA256 (noble, keyed per call) of the very bytes the token signs, and
// verification time per byte for a small and a maximal token (linear work).
// Each round measures every contender briefly, one after the other, and
// ratios are taken within a round; the median over many rounds is printed,
// so a busy machine slows both sides of a ratio alike.
import { hmac } from "@noble/hashes/hmac.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { Keyring, mintToken, verifyToken, inspectToken, InvalidTokenError, cursorMinter } from "../dist/index.js";

const before = process.env.BENCH_TOKENS_BEFORE ? await import(process.env.BENCH_TOKENS_BEFORE) : undefined;

const ROUNDS = 31;
const MIN_ROUND_MS = 30;

const secret = new Uint8Array(32).map((_, i) => i);
const keyring = new Keyring({ active: "k-2026", keys: [{ id: "k-2026", secret }] });
const session = {
  issuer: "golem-stream.example",
  audience: "golem-stream",
  account: "account-7",
  principal: "user:alice",
  issuedAt: 1796083200000n,
  sessionId: "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f",
  application: "demo",
  environment: "default",
  agentType: "echo",
  agentIdentity: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
  method: "reverse",
  generation: 1n,
  idempotencyKey: "upload-42",
  streamKeyId: "k-2026",
};
const token = mintToken("session", session, keyring);
const decoded = Buffer.from(token.slice(5), "base64url");
const payload = decoded.subarray(0, decoded.length - 32);
// Exactly what the token's HMAC covers: domain, 0x00, kind word, 0x00, payload.
const signedBytes = Uint8Array.from(Buffer.concat([Buffer.from("golem.agent-invocation.token.v1\0session\0", "ascii"), payload]));

const stream = {
  issuer: "golem-stream.example",
  audience: "golem-stream",
  account: "account-7",
  principal: "user:alice",
  issuedAt: 1796083200000n,
  sessionId: "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f",
  streamId: "0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3",
  direction: "output",
  elementSchemaDigest: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
};
const smallStream = mintToken("stream", { ...stream, coordinate: "result" }, keyring);
const smallBytes = Buffer.from(smallStream.slice(5), "base64url").length;
const largestStream = mintToken("stream", { ...stream, coordinate: "x".repeat(6140 - smallBytes + "result".length) }, keyring);
const junk = `gai1_${"A".repeat(8186)}!`;

// A stream's cursor tokens as a server mints them: a burst of 16 per millisecond, positions counting up.
const cursorFields = {
  issuer: stream.issuer,
  audience: stream.audience,
  account: stream.account,
  principal: stream.principal,
  sessionId: stream.sessionId,
  streamId: stream.streamId,
};
const cursorMinting = (mod) => {
  const minter = mod.cursorMinter(new mod.Keyring({ active: "k-2026", keys: [{ id: "k-2026", secret }] }), cursorFields);
  let position = 0n;
  let issuedAt = 1796083200000n;
  return () => {
    position++;
    if ((position & 15n) === 0n) issuedAt++;
    return minter.mint(issuedAt, position, "item").length;
  };
};
const mintCursor = cursorMinting({ cursorMinter, Keyring });
const mintCursorBefore = before === undefined ? undefined : cursorMinting(before);

let sink = 0;
const contenders = {
  "cursorMinter.mint": () => (sink ^= mintCursor()),
  ...(mintCursorBefore === undefined ? {} : { "cursorMinter.mint, BENCH_TOKENS_BEFORE": () => (sink ^= mintCursorBefore()) }),
  "bare hmac(sha256, key, bytes)": () => (sink ^= hmac(sha256, secret, signedBytes)[0]),
  mintToken: () => (sink ^= mintToken("session", session, keyring).length),
  verifyToken: () => (sink ^= Number(verifyToken(token, "session", keyring).fields.generation)),
  inspectToken: () => (sink ^= inspectToken(token).keyId.length),
  "verifyToken, small stream token": () => (sink ^= verifyToken(smallStream, "stream", keyring).keyId.length),
  "verifyToken, 8192-char stream token": () => (sink ^= verifyToken(largestStream, "stream", keyring).keyId.length),
  "reject 8192 chars of junk": () => {
    try {
      verifyToken(junk, "session", keyring);
    } catch (error) {
      if (!(error instanceof InvalidTokenError)) throw error;
      sink ^= 1;
    }
  },
};

/** Operations per second of `fn`, over at least MIN_ROUND_MS. */
function rate(fn) {
  let iterations = 0;
  let batch = 64;
  const start = performance.now();
  let elapsed = 0;
  while (elapsed < MIN_ROUND_MS) {
    for (let i = 0; i < batch; i++) fn();
    iterations += batch;
    batch *= 2;
    elapsed = performance.now() - start;
  }
  return (iterations / elapsed) * 1000;
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

for (const fn of Object.values(contenders)) for (let i = 0; i < 2000; i++) fn(); // warm-up
const samples = Object.fromEntries(Object.keys(contenders).map((name) => [name, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, fn] of Object.entries(contenders)) samples[name].push(rate(fn));
}
const ops = Object.fromEntries(Object.entries(samples).map(([name, values]) => [name, median(values)]));
/** Median over rounds of a / b measured in the same round. */
const ratio = (a, b) => median(samples[a].map((value, round) => value / samples[b][round]));

const bare = ops["bare hmac(sha256, key, bytes)"];
const fmt = (n) => `${Math.round(n).toLocaleString("en-US")} ops/s`;
console.log(`@golem-stream/tokens bench — node ${process.version}, ratios are medians over ${ROUNDS} rounds`);
console.log(`session token: ${token.length} chars, HMAC covers ${signedBytes.length} bytes`);
console.log("");
for (const [name, value] of Object.entries(ops)) console.log(`${name.padEnd(38)} ${fmt(value).padStart(18)}`);
console.log("");
const BARE = "bare hmac(sha256, key, bytes)";
console.log(`mintToken   / bare HMAC  = ${ratio("mintToken", BARE).toFixed(2)}x   (target >= 0.70x)`);
console.log(`cursor token: ${(1e9 / ops["cursorMinter.mint"]).toFixed(0)} ns each (16 per millisecond)`);
if (mintCursorBefore !== undefined) {
  console.log(
    `cursorMinter.mint / BENCH_TOKENS_BEFORE's = ${ratio("cursorMinter.mint", "cursorMinter.mint, BENCH_TOKENS_BEFORE").toFixed(2)}x (${(1e9 / ops["cursorMinter.mint, BENCH_TOKENS_BEFORE"]).toFixed(0)} ns before)`,
  );
}
console.log(`verifyToken / bare HMAC  = ${ratio("verifyToken", BARE).toFixed(2)}x   (target >= 0.70x)`);
const small = "verifyToken, small stream token";
const large = "verifyToken, 8192-char stream token";
// Time per character of the large token relative to the small one: linear work stays at or below 1.
const perChar = ratio(small, large) * (smallStream.length / largestStream.length);
console.log(
  `verify time per char, ${largestStream.length}-char vs ${smallStream.length}-char token = ${perChar.toFixed(2)}x   (linear work: <= 1x)`,
);
console.log(`reject junk / verify a valid 8192-char token = ${ratio("reject 8192 chars of junk", large).toFixed(2)}x faster`);
if (sink === 0.5) console.log(sink);
