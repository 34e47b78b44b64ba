/**
 * The stages of the small-item path, as bench/profile-budget.mjs (CPU) and bench/allocations.mjs
 * (garbage) report them: the first rule matching a frame's script names its stage; a frame no
 * rule names (a native or Node function) counts for whoever called it.
 */
export const STAGES = [
  ["store (SQLite, group commit, sync)", (url) => /better-sqlite3|server\/dist\/store\//.test(url)],
  // The transports' own WebSocket frames, written and read, are the socket's work, though wire does it.
  ["socket (ws, net, libuv)", (url) => /wire\/dist\/websocket-(text-frames|frame-reader|masking)/.test(url)],
  [
    "encode (client: items) / acknowledgement (server)",
    (url) => /group-acks|wire\/dist\/(encode|canonical-json|envelope)|tokens\/dist|noble/.test(url),
  ],
  ["decode (strict, wire)", (url) => /wire\/dist\//.test(url)],
  ["validation (SchemaValue, canonical value)", (url) => /schema-value\/dist|server\/dist\/(values|agent-values)/.test(url)],
  [
    "agent iteration (queue, agent)",
    (url) => /server\/dist\/(invocation\/(input-queue|mapped-iterable|output-)|demo\/|agent-host|contracts)/.test(url),
  ],
  ["routing (connection, attachment, session)", (url) => /server\/dist\//.test(url)],
  ["client runtime (feeder, channels, session)", (url) => /client\/dist\//.test(url)],
  ["durable peer (bench)", (url) => /bench\/(durable-peer|baseline-clients)/.test(url)],
  [
    "socket (ws, net, libuv)",
    (url) =>
      /node_modules\/.*ws\/lib|bufferutil|^node:(net|stream|internal\/stream|internal\/streams|internal\/stream_base_commons)/.test(url),
  ],
  ["promises / microtasks", (url, name) => name === "runMicrotasks" || name === "processTicksAndRejections"],
];
