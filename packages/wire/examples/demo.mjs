#!/usr/bin/env node
// A tour of @golem-stream/wire: decode a few protocol messages, show their
// typed form, re-encode them canonically, and watch strict decoding refuse
// bad input with a stable code.
//
//   node packages/wire/examples/demo.mjs      (after building: npx tsc -p packages/wire/tsconfig.json)
import { fileURLToPath } from "node:url";
import { inspect } from "node:util";

const dist = new URL("../dist/index.js", import.meta.url);
let wire;
try {
  wire = await import(dist.href);
} catch (error) {
  console.error(`Cannot load ${fileURLToPath(dist)}: build it first with "npx tsc -p packages/wire/tsconfig.json".`);
  console.error(String(error));
  process.exit(1);
}
const { decodeClientMessage, decodeServerMessage, encodeMessage, recoverAttemptId, ProtocolError } = wire;

const show = (value) => inspect(value, { depth: 6, colors: process.stdout.isTTY, breakLength: 100 });
const hex = (bytes) => Buffer.from(bytes).toString("hex").replace(/(..)/g, "$1 ").trim();
const section = (title) => console.log(`\n== ${title} ==`);

section("A client starts an invocation (text frame, as ws delivers it: bytes)");
const startText = `{
  "version": 1, "type": "invocationStart",
  "attemptId": "ca7e5a82-2064-4c18-8359-806145c1562f",
  "idempotencyKey": "upload-42",
  "selector": {"application": "demo", "environment": "default", "agentType": "echo", "method": "reverse",
               "constructorParameters": {"kind": "record", "value": {"fields": [{"kind": "string", "value": "me"}]}}},
  "methodParameters": {"kind": "record", "value": {"fields": [
    {"kind": "stream", "value": {"provisionalRef": "0dff1c71-f12f-4bb1-996c-23d693bdc825"}}]}},
  "config": []
}`;
const start = decodeClientMessage(new TextEncoder().encode(startText), false);
console.log("decoded:", show(start));
console.log("canonical:", encodeMessage(start));

section("The server acknowledges input (u64 positions are bigints)");
const ack = decodeServerMessage(
  '{"channel":1,"highestContiguousSequence":"18446744073709551615","mappings":[],"terminal":true,"type":"inputStreamAck","version":1}',
  false,
);
console.log("decoded:", show(ack));

section("A packed stream<u8> batch (binary frame)");
const batch = { type: "input-u8", channel: 1, sequence: 0n, payload: new TextEncoder().encode("hi!") };
const envelope = encodeMessage(batch);
console.log("envelope:", hex(envelope));
const back = decodeClientMessage(envelope, true);
console.log("decoded:", show(back), "\npayload is a view of the envelope:", back.payload.buffer === envelope.buffer);

section("Strict decoding refuses, with a stable code");
const attempts = [
  ["duplicate member", '{"channel":1,"channel":2,"sequence":"1","type":"inputStreamEnd","version":1}', false],
  ["non-canonical decimal", '{"channel":1,"sequence":"01","type":"inputStreamEnd","version":1}', false],
  ["server-only cancel reason from a client", '{"channel":1,"reason":"protocol-error","type":"streamCancel","version":1}', false],
  ["binary metadata length over 64 KiB", new Uint8Array([0, 1, 0, 1, 0x7b, 0x7d]), true],
];
for (const [label, data, isBinary] of attempts) {
  try {
    decodeClientMessage(data, isBinary);
    console.log(`${label}: accepted (unexpected)`);
  } catch (error) {
    if (!(error instanceof ProtocolError)) throw error;
    console.log(`${label.padEnd(40)} -> ${error.code} (close ${error.closeCode}): ${error.message}`);
  }
}

section("A broken first message still names its attempt, for invocationRejected");
const broken = startText.replace('"config": []', '"config": {}');
console.log("recoverAttemptId:", recoverAttemptId(broken));
