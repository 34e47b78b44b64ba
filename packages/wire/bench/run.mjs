// Benchmarks of @golem-stream/wire against dist/ (build first: npx tsc -p tsconfig.json).
// Every figure is a ratio to a baseline measured side by side in the same run,
// so the numbers compare across machines. Usage: node bench/run.mjs [--quick]
//
// The target: decodeClientMessage on a realistic corpus runs at
// least 0.5x the throughput of plain JSON.parse of the same bytes.
import { createHash } from "node:crypto";
import { performance } from "node:perf_hooks";
import { decodeClientMessage, decodeServerMessage, encodeMessage } from "../dist/index.js";

const quick = process.argv.includes("--quick");
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Times `baseline` and `candidate` in alternating samples of `rounds` passes
 * and keeps the best sample of each (ms per pass): both see the same machine
 * load, and the least disturbed run is the one that measures the code.
 */
function race(baseline, candidate, rounds, samples = quick ? 5 : 15) {
  baseline();
  candidate(); // warm up both
  let bestBaseline = Number.POSITIVE_INFINITY;
  let bestCandidate = Number.POSITIVE_INFINITY;
  const sample = (fn) => {
    const start = performance.now();
    for (let i = 0; i < rounds; i++) fn();
    return (performance.now() - start) / rounds;
  };
  for (let s = 0; s < samples; s++) {
    bestBaseline = Math.min(bestBaseline, sample(baseline));
    bestCandidate = Math.min(bestCandidate, sample(candidate));
  }
  return { baseline: bestBaseline, candidate: bestCandidate };
}

function token(label, length) {
  let text = "gai1_";
  for (let i = 0; text.length < length; i++) text += createHash("sha256").update(`${label}${i}`).digest("base64url");
  return text.slice(0, length);
}

// ---- a realistic corpus: what a session carries most ----

const sv = (kind, value) => ({ kind, value });
const smallItem = (i) => ({
  channel: 1,
  sequence: String(i),
  type: "inputStreamItem",
  value: sv("string", `line ${i}: the quick brown fox jumps over the lazy dog`),
  version: 1,
});
const mediumItem = (i) => ({
  channel: 3,
  sequence: String(1000 + i),
  type: "inputStreamItem",
  value: sv("record", {
    fields: [
      sv("string", `order-${i}`),
      sv("u64", String(1234567890123 + i)),
      sv("list", {
        elements: Array.from({ length: 12 }, (_, j) =>
          sv("record", { fields: [sv("string", `sku-${j}`), sv("u32", j * 7), sv("f64", j / 3), sv("bool", j % 2 === 0)] }),
        ),
      }),
      sv("option", { inner: sv("text", { text: "näive café — déjà vu 😀", language: "fr" }) }),
    ],
  }),
  version: 1,
});
const clientCorpus = [];
for (let i = 0; i < 200; i++) {
  clientCorpus.push(i % 4 === 3 ? mediumItem(i) : smallItem(i));
  if (i % 50 === 49) clientCorpus.push({ channel: 1, sequence: String(i + 1), type: "inputStreamEnd", version: 1 });
  if (i % 100 === 99) clientCorpus.push({ channel: 5, reason: "consumer-drop", type: "streamCancel", version: 1 });
}
const serverCorpus = [];
for (let i = 0; i < 200; i++) {
  serverCorpus.push({
    channel: 2,
    cursorToken: token(`cursor${i}`, 200),
    mappings: [],
    sequence: String(i),
    type: "outputStreamItem",
    value: i % 4 === 3 ? mediumItem(i).value : smallItem(i).value,
    version: 1,
  });
  serverCorpus.push({
    channel: 1,
    highestContiguousSequence: String(i + 1),
    mappings: [],
    terminal: false,
    type: "inputStreamAck",
    version: 1,
  });
}
serverCorpus.push({
  channel: 2,
  cursorToken: token("end", 200),
  outcome: { kind: "ok" },
  sequence: "200",
  type: "outputStreamEnd",
  version: 1,
});

// ws delivers text frames as bytes: both sides start from the same bytes.
const clientFrames = clientCorpus.map((m) => encoder.encode(JSON.stringify(m)));
const serverFrames = serverCorpus.map((m) => encoder.encode(JSON.stringify(m)));
const bytesOf = (frames) => frames.reduce((sum, f) => sum + f.length, 0);

function compareDecode(label, frames, decode) {
  const { baseline, candidate: ours } = race(
    () => {
      for (const frame of frames) JSON.parse(decoder.decode(frame));
    },
    () => {
      for (const frame of frames) decode(frame, false);
    },
    quick ? 10 : 30,
  );
  const mib = bytesOf(frames) / 1048576;
  console.log(`${label}: ${frames.length} messages, ${(bytesOf(frames) / 1024).toFixed(0)} KiB`);
  console.log(`  JSON.parse(TextDecoder.decode(bytes))  ${(mib / (baseline / 1000)).toFixed(0).padStart(6)} MiB/s`);
  console.log(
    `  ${label.padEnd(37)} ${(mib / (ours / 1000)).toFixed(0).padStart(6)} MiB/s   throughput x${(baseline / ours).toFixed(2)} of JSON.parse`,
  );
  return baseline / ours;
}

const clientRatio = compareDecode("decodeClientMessage", clientFrames, decodeClientMessage);
const serverRatio = compareDecode("decodeServerMessage", serverFrames, decodeServerMessage);

// ---- encoding: canonical JSON vs JSON.stringify of the same message ----
{
  const typed = clientFrames.map((f) => decodeClientMessage(f, false));
  const { baseline, candidate: ours } = race(
    () => {
      for (const m of clientCorpus) encoder.encode(JSON.stringify(m));
    },
    () => {
      for (const m of typed) encoder.encode(encodeMessage(m));
    },
    quick ? 10 : 30,
  );
  console.log("encodeMessage (canonical, checked) of the client corpus, to bytes");
  console.log(`  throughput x${(baseline / ours).toFixed(2)} of JSON.stringify (unordered, unchecked)`);
}

// ---- binary envelopes: decoding is a view, encoding one copy ----
{
  const payload = new Uint8Array(1024 * 1024).fill(7);
  const message = { type: "input-u8", channel: 1, sequence: 0n, payload };
  const frame = encodeMessage(message);
  const rounds = quick ? 20 : 100;
  const { baseline: copy, candidate: encode } = race(
    () => new Uint8Array(payload),
    () => encodeMessage(message),
    rounds,
  );
  const { candidate: decode } = race(
    () => new Uint8Array(payload),
    () => decodeClientMessage(frame, true),
    rounds,
  );
  console.log("binary input-u8, 1 MiB payload");
  console.log(`  encodeMessage                          x${(encode / copy).toFixed(2)} the time of one payload copy`);
  console.log(`  decodeClientMessage                    x${(decode / copy).toFixed(3)} the time of one payload copy (a view, no copy)`);
}

const target = 0.5;
const verdict = clientRatio >= target ? "meets" : "MISSES";
console.log(
  `\ntarget: decodeClientMessage >= ${target}x JSON.parse: x${clientRatio.toFixed(2)} ${verdict} it (server side x${serverRatio.toFixed(2)})`,
);
