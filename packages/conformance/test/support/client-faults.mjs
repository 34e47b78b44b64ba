// Faulty variants of @golem-stream/client, for the client suite's teeth
// (client-faults.test.ts). Each wraps the client's Transport — the seam
// between its session runtime and the network — and, for the rules of saved
// state, the state it persists (`checkpoint` hook), so that the real client
// behaves as if it had one bug, without any change to its source. Plain
// JavaScript: the adapter runs as a child process of plain Node.
import { randomUUID } from "node:crypto";

/**
 * A transport that passes every message through `hooks`:
 * `inbound(message, conn)` and `outbound(message, conn)` return the message to
 * pass on (possibly changed) or `undefined` to drop it; `close(info)` may
 * change how a connection's end is reported; `connectError(error)` may
 * replace the error of a refused handshake; `pause: false` makes pausing a
 * no-op (the client goes on reading its socket). `conn` is per connection:
 * `{ index, channels: Map<channel, streamToken> }`, filled from every mapping
 * the server sends.
 */
function wrap(transport, hooks) {
  let index = 0;
  return {
    async connect(request, handlers) {
      const conn = { index: ++index, channels: new Map() };
      const connecting = transport.connect(request, {
        onMessage(message, wireBytes) {
          // A channel keeps its first stream: rebinding one is the server's violation, for the client to catch.
          for (const mapping of message.mappings ?? [])
            if (!conn.channels.has(mapping.channel)) conn.channels.set(mapping.channel, mapping.streamToken);
          const passed = hooks.inbound ? hooks.inbound(message, conn) : message;
          if (passed !== undefined) handlers.onMessage(passed, wireBytes);
        },
        onClose(info) {
          handlers.onClose(hooks.close ? hooks.close(info) : info);
        },
      });
      const connection = hooks.connectError
        ? await connecting.catch((error) => Promise.reject(hooks.connectError(error)))
        : await connecting;
      return {
        send(message) {
          const passed = hooks.outbound ? hooks.outbound(message, conn) : message;
          if (passed !== undefined) connection.send(passed);
        },
        pause: () => (hooks.pause === false ? undefined : connection.pause()),
        resume: () => connection.resume(),
        close: (code, reason) => connection.close(code, reason),
      };
    },
  };
}

/** Each fault: a function of nothing returning the hooks (fresh state per adapter process). */
export const CLIENT_FAULTS = {
  // The wrapper alone: must change nothing.
  none: () => ({}),

  // The cursor advances on receipt: a resume names the last item that arrived, delivered or not.
  "cursor-before-delivery": () => {
    const latest = new Map();
    return {
      inbound(message, conn) {
        if ((message.type === "outputStreamItem" || message.type === "outputStreamEnd") && message.cursorToken !== undefined) {
          latest.set(conn.channels.get(message.channel), message.cursorToken);
        }
        if (message.type === "output-u8" || message.type === "output-binary")
          latest.set(conn.channels.get(message.channel), message.cursorToken);
        return message;
      },
      outbound(message) {
        return message.type === "resumeAttach" && latest.size > 0 ? { ...message, outputCursors: [...latest.values()] } : message;
      },
    };
  },

  // After a reconnect the client does not resend input it had sent before, whatever the high-water says.
  "no-suffix-resend": () => {
    const sent = new Map(); // stream token -> sequences sent on earlier connections (and this one)
    return {
      outbound(message, conn) {
        if (message.type !== "inputStreamItem" && message.type !== "inputStreamEnd" && message.type !== "input-u8") return message;
        const token = conn.channels.get(message.channel);
        const key = `${message.type}:${message.sequence}`;
        const seen = sent.get(token) ?? new Map();
        sent.set(token, seen);
        const first = seen.get(key);
        if (first !== undefined && first !== conn.index) return undefined;
        seen.set(key, conn.index);
        return message;
      },
    };
  },

  // Replay de-duplication off by one: the replayed item at the last received sequence is delivered again.
  "off-by-one-dedup": () => {
    const highest = new Map();
    const shift = new Map();
    return {
      inbound(message, conn) {
        if (message.type !== "outputStreamItem" && message.type !== "output-binary" && message.type !== "outputStreamEnd") return message;
        const token = conn.channels.get(message.channel);
        if (message.type !== "outputStreamEnd") {
          const top = highest.get(token);
          if (top !== undefined && message.sequence === top && conn.index > 1) shift.set(token, (shift.get(token) ?? 0n) + 1n);
          if (top === undefined || message.sequence > top) highest.set(token, message.sequence);
        }
        return { ...message, sequence: message.sequence + (shift.get(token) ?? 0n) };
      },
    };
  },

  // An uncertain start or resume is retried with a new attempt id instead of the same one.
  "new-attempt-on-retry": () => {
    const used = new Set();
    return {
      outbound(message) {
        if (message.type !== "invocationStart" && message.type !== "resumeAttach") return message;
        if (!used.has(message.attemptId)) {
          used.add(message.attemptId);
          return message;
        }
        return { ...message, attemptId: randomUUID() };
      },
    };
  },

  // One output item (the third) is lost between the socket and the session.
  "skip-item": () => {
    let items = 0;
    return { inbound: (message) => (message.type === "outputStreamItem" && ++items === 3 ? undefined : message) };
  },

  // Messages on channels never announced are ignored instead of failing the invocation.
  "lenient-channels": () => ({
    inbound: (message, conn) => ("channel" in message && !conn.channels.has(message.channel) ? undefined : message),
  }),

  // A mapping that rebinds a channel already in use is dropped instead of failing the invocation.
  "ignore-channel-rebinding": () => ({
    inbound(message, conn) {
      if (!Array.isArray(message.mappings)) return message;
      const kept = message.mappings.filter((m) => conn.channels.get(m.channel) === m.streamToken);
      return kept.length === message.mappings.length ? message : { ...message, mappings: kept };
    },
  }),

  // The high-water of a resumed acceptance is ignored: every input is taken as starting from zero.
  "ignore-high-water": () => ({
    inbound(message, conn) {
      if (message.type !== "invocationAccepted" || conn.index === 1) return message;
      return {
        ...message,
        mappings: message.mappings.map((m) => (m.direction === "input" ? { ...m, inputHighWater: { sequence: 0n, terminal: false } } : m)),
      };
    },
  }),

  // Resumes keep the first session token instead of the refreshed one.
  "stale-session-token": () => {
    let first;
    return {
      inbound(message) {
        if (message.type === "invocationAccepted") first ??= message.sessionToken;
        return message;
      },
      outbound: (message) => (message.type === "resumeAttach" && first !== undefined ? { ...message, sessionToken: first } : message),
    };
  },

  // Undecodable server bytes are treated as a lost connection (retried) instead of a violation.
  "retry-violations": () => ({
    close: (info) => (info.error === undefined ? info : { code: 1006, reason: "" }),
  }),

  // A start after a retryable rejection is the rejected one again (same attempt id and provisional references).
  "reuse-rejected-start": () => {
    let first;
    return {
      outbound(message) {
        if (message.type !== "invocationStart") return message;
        first ??= message;
        return first;
      },
    };
  },

  // A refused handshake is taken as an uncertain loss: even a definitive refusal is retried.
  "retry-refused-handshake": () => ({
    connectError: () => new Error("connection lost"),
  }),

  // attachmentRevoked is not seen: the replaced client reconnects as after a loss.
  "ignore-revocation": () => ({
    inbound: (message) => (message.type === "attachmentRevoked" ? undefined : message),
  }),

  // The saved state names the last output item that arrived, delivered or not: a restart skips the rest.
  "checkpoint-before-delivery": () => {
    const latest = new Map();
    return {
      inbound(message, conn) {
        if (message.type === "outputStreamItem") latest.set(conn.channels.get(message.channel), message.cursorToken);
        return message;
      },
      checkpoint: (state) =>
        state.sessionToken !== undefined && latest.size > 0 ? { ...state, outputCursors: [...latest.values()] } : state,
    };
  },

  // A start saved while its outcome was unknown is saved with a new attempt id: the restarted process does not retry it exactly.
  "refrozen-pending-start": () => ({
    checkpoint: (state) =>
      state.pendingOperation?.type === "invocationStart"
        ? { ...state, pendingOperation: { ...state.pendingOperation, attemptId: randomUUID() } }
        : state,
  }),

  // An input whose source stayed behind with a crashed process is left open instead of cancelled.
  "keep-orphaned-inputs": () => ({
    outbound: (message) => (message.type === "streamCancel" && message.reason === "source-unavailable" ? undefined : message),
  }),

  // Pausing does nothing: the client reads its socket whatever its queues hold, and buffers without bound.
  "unbounded-buffering": () => ({ pause: false }),
};

/** The options of `runClientAdapter` that give the client fault `name`. */
export function faultyAdapterOptions(name) {
  const fault = CLIENT_FAULTS[name];
  if (fault === undefined) throw new Error(`unknown fault ${name}`);
  const hooks = fault();
  return { wrapTransport: (transport) => wrap(transport, hooks), ...(hooks.checkpoint ? { wrapCheckpoint: hooks.checkpoint } : {}) };
}
