/**
 * The hand-written durable peer: what a user could write instead of the protocol, doing the
 * same durable work per message, and nothing else. The far end of `durableWs` in
 * bench/baseline-clients.mjs; started by `node bench/peer.mjs durable <dataDir>`.
 *
 * Per connection (`/?count=N`, N messages expected): every message, binary or text, is one
 * record appended to a file of its own (a 4-byte length, then the bytes: a log whose records can
 * be read back one by one, as the store keeps items). A binary message is also hashed with
 * SHA-256 (the demo `digest` agent's work), a text message counted (`tally`'s). The records of one
 * event-loop turn and of every turn while a sync runs are gathered into one `writev`, then one
 * `fdatasync`; when it returns, the peer acknowledges every byte written before that sync began
 * (a text message: the cumulative payload byte count). Once all N messages are acknowledged it
 * sends `done <sha-256 hex | count>`. One write and one sync at a time per connection.
 *
 * Each log stays until the bench removes its data directory, as golem-stream's sessions and Durable
 * Streams' streams stay: a durable log is kept after its writer goes. Deleting it at the
 * connection's close hands its page-cache pages straight to the next connection's writes, which on
 * a VM that returns freed memory to its host is far cheaper than fresh pages (2.3 against 1.0 ms
 * of kernel CPU per MiB here). `BENCH_PEER_DISCARD=1` deletes each log at its connection's close,
 * for comparison with figures taken that way.
 */
import { createHash } from "node:crypto";
import { closeSync, fdatasync, openSync, rmSync, writev } from "node:fs";
import { join } from "node:path";
import { WebSocketServer } from "ws";

const MIB = 1024 * 1024;
/** Length prefixes are cut from slabs of this size: no allocation per record beyond a view. */
const SLAB = 64 * 1024;
/** `writev` takes at most IOV_MAX (1024 on Linux) buffers per call. */
const IOV_MAX = 1024;
const DISCARD_LOGS = process.env.BENCH_PEER_DISCARD === "1";

export function startDurablePeer(dataDir) {
  const wss = new WebSocketServer({ port: 0, host: "127.0.0.1", perMessageDeflate: false, maxPayload: 32 * MIB });
  let connections = 0;
  wss.on("connection", (socket, request) => {
    const expected = Number(new URL(request.url, "ws://x").searchParams.get("count"));
    const path = join(dataDir, `durable-${connections++}.log`);
    const fd = openSync(path, "w");
    const hash = createHash("sha256");
    let seen = 0;
    let pending = [];
    let pendingBytes = 0;
    let acked = 0;
    let total = 0;
    let syncing = false;
    let slab = Buffer.allocUnsafe(SLAB);
    let slabUsed = 0;

    const lengthOf = (byteLength) => {
      if (slabUsed + 4 > SLAB) ((slab = Buffer.allocUnsafe(SLAB)), (slabUsed = 0));
      const prefix = slab.subarray(slabUsed, slabUsed + 4);
      prefix.writeUInt32LE(byteLength, 0);
      slabUsed += 4;
      return prefix;
    };

    const finish = () => {
      closeSync(fd);
      if (DISCARD_LOGS) rmSync(path, { force: true });
    };

    /** Writes everything gathered so far in one `writev` (IOV_MAX at a time), syncs once, acknowledges it. */
    const flush = () => {
      const buffers = pending;
      const bytes = pendingBytes;
      pending = [];
      pendingBytes = 0;
      const writeFrom = (start) => {
        if (start >= buffers.length)
          return fdatasync(fd, (error) => {
            if (error) throw error;
            acked += bytes;
            socket.send(String(acked));
            if (seen === expected && pending.length === 0) {
              socket.send(`done ${total > 0 ? String(total) : hash.digest("hex")}`);
              syncing = false;
              return;
            }
            if (pending.length > 0) flush();
            else syncing = false;
          });
        const slice = buffers.slice(start, start + IOV_MAX);
        writev(fd, slice, (error) => {
          if (error) throw error;
          writeFrom(start + IOV_MAX);
        });
      };
      writeFrom(0);
    };

    socket.on("message", (data, isBinary) => {
      seen++;
      if (isBinary) hash.update(data);
      else total++;
      pending.push(lengthOf(data.byteLength), data);
      pendingBytes += data.byteLength;
      if (!syncing) {
        syncing = true;
        // The rest of this turn's messages join the same write.
        setImmediate(flush);
      }
    });
    socket.on("close", finish);
  });
  return new Promise((resolve) =>
    wss.once("listening", () => resolve({ url: `ws://127.0.0.1:${wss.address().port}`, close: () => new Promise((r) => wss.close(r)) })),
  );
}
