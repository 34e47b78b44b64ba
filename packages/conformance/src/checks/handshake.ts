/** Transport and handshake (protocol section 1; decisions section 5 for the HTTP error envelope). */
import { SUBPROTOCOL } from "@golem-stream/wire";
import { defineChecks, ensure, ensureEqual, show, type Check } from "../check.js";
import type { ProbeResult } from "../http-probe.js";
import { countStart } from "../demo.js";

/** Golem's HTTP error envelope: 400 carries {code, errors:[..]}, every other status {code, error}. */
export function ensureEnvelope(result: ProbeResult, status: number, code: string): string {
  ensureEqual(result.status, status, `HTTP status (body ${show(result.body)})`);
  const body = result.body as { code?: unknown; errors?: unknown; error?: unknown } | undefined;
  ensure(typeof body === "object" && body !== null, `body is not a JSON object: ${show(result.body)}`);
  ensureEqual(body.code, code, "error envelope code");
  if (status === 400)
    ensure(Array.isArray(body.errors) && body.errors.every((e) => typeof e === "string"), `400 envelope without errors[]: ${show(body)}`);
  else ensure(typeof body.error === "string", `envelope without error text: ${show(body)}`);
  return `HTTP ${result.status} ${show(body)}`;
}

export const handshakeChecks: Check[] = defineChecks("handshake", [
  {
    name: "selects-subprotocol",
    ref: "§1",
    expectation: `an upgrade offering ${SUBPROTOCOL} with a valid token is accepted with exactly that subprotocol`,
    async run(ctx) {
      const result = await ctx.probe({ token: ctx.token, protocols: [SUBPROTOCOL] });
      ensureEqual(result.status, 101, "HTTP status");
      ensureEqual(result.headers["sec-websocket-protocol"], SUBPROTOCOL, "selected subprotocol");
      return `101, ${SUBPROTOCOL}`;
    },
  },
  {
    name: "selects-among-several",
    ref: "§1",
    expectation: `an upgrade offering another subprotocol before ${SUBPROTOCOL} selects exactly ${SUBPROTOCOL}`,
    async run(ctx) {
      const result = await ctx.probe({ token: ctx.token, protocols: ["golem.agent-invocation.v0", SUBPROTOCOL, "chat"] });
      ensureEqual(result.status, 101, "HTTP status");
      ensureEqual(result.headers["sec-websocket-protocol"], SUBPROTOCOL, "selected subprotocol");
    },
  },
  {
    name: "missing-subprotocol",
    ref: "§1, decisions §5",
    expectation: "an upgrade without Sec-WebSocket-Protocol fails with HTTP 400 unsupported-subprotocol",
    run: async (ctx) => ensureEnvelope(await ctx.probe({ token: ctx.token }), 400, "unsupported-subprotocol"),
  },
  {
    name: "unsupported-subprotocol",
    ref: "§1, decisions §5",
    expectation: "an upgrade offering only other subprotocols fails with HTTP 400 unsupported-subprotocol",
    run: async (ctx) =>
      ensureEnvelope(await ctx.probe({ token: ctx.token, protocols: ["golem.agent-invocation.v2"] }), 400, "unsupported-subprotocol"),
  },
  {
    name: "missing-token",
    ref: "§1, decisions §5",
    expectation: "an upgrade without Authorization fails with HTTP 401 unauthenticated (authentication before upgrade)",
    run: async (ctx) => ensureEnvelope(await ctx.probe({ protocols: [SUBPROTOCOL] }), 401, "unauthenticated"),
  },
  {
    name: "tampered-token",
    ref: "§1, decisions §5",
    expectation: "an upgrade whose bearer token is the valid one with a changed last character fails with HTTP 401 unauthenticated",
    run: async (ctx) => {
      const last = ctx.token.at(-1) === "x" ? "y" : "x";
      return ensureEnvelope(await ctx.probe({ token: ctx.token.slice(0, -1) + last, protocols: [SUBPROTOCOL] }), 401, "unauthenticated");
    },
  },
  {
    name: "extended-token",
    ref: "§1, decisions §5",
    expectation: "an upgrade whose bearer token is the valid one plus a suffix fails with HTTP 401 unauthenticated",
    run: async (ctx) => ensureEnvelope(await ctx.probe({ token: `${ctx.token}0`, protocols: [SUBPROTOCOL] }), 401, "unauthenticated"),
  },
  {
    name: "not-a-websocket",
    ref: "decisions §5",
    expectation: "a plain GET of the endpoint without upgrade headers is answered HTTP 426 not-a-websocket",
    run: async (ctx) => ensureEnvelope(await ctx.probe({ token: ctx.token, upgrade: false }), 426, "not-a-websocket"),
  },
  {
    name: "no-compression",
    ref: "§1",
    expectation: "an upgrade offering permessage-deflate is accepted without negotiating it (no Sec-WebSocket-Extensions)",
    async run(ctx) {
      const result = await ctx.probe({
        token: ctx.token,
        protocols: [SUBPROTOCOL],
        extensions: "permessage-deflate; client_max_window_bits",
      });
      ensureEqual(result.status, 101, "HTTP status");
      ensureEqual(result.headers["sec-websocket-extensions"], undefined, "Sec-WebSocket-Extensions");
    },
  },
  {
    name: "fragmentation-ignored",
    ref: "§1",
    expectation: "a first message split across WebSocket fragments is one protocol message: the start is accepted",
    async run(ctx) {
      // A protocol connection, so that the check's end terminates it like any other; the frames go out by hand.
      const conn = await ctx.connect();
      const text = JSON.stringify({ ...countStart(1, 0), version: 1 });
      const middle = Math.floor(text.length / 2);
      conn.socket.send(text.slice(0, middle), { fin: false, binary: false });
      conn.socket.send(text.slice(middle), { fin: true, binary: false });
      const first = await conn.next("the answer to a fragmented start");
      ensureEqual(first.type, "invocationAccepted", "answer to the fragmented start");
    },
  },
]);
