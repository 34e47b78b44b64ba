/**
 * The conformance audit's tools: the strict raw protocol client the other
 * loopback tests use (`RawClient`, under the audit's name), and a raw HTTP
 * exchange for handshake checks that `ws` would refuse to make (wrong
 * method, broken key, wrong version).
 */
import { connect } from "node:net";
import { SESSION_PATH, SUBPROTOCOL } from "@golem-stream/wire";
import { TOKEN } from "../helpers.js";

export { TOKEN as AUDIT_TOKEN, RawClient as AuditClient, type Closed } from "../helpers.js";

export interface RawHttpAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/**
 * Sends `head` (request line and headers, without the final blank line) on
 * a fresh TCP connection and reads the answer until the server closes or a
 * complete Content-Length body arrived. A 101 answer is reported with an
 * empty body and the socket is destroyed.
 */
export function rawHttp(httpUrl: string, head: string): Promise<RawHttpAnswer> {
  const { hostname, port } = new URL(httpUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let text = "";
    const finish = (): void => {
      const split = text.indexOf("\r\n\r\n");
      const headText = split < 0 ? text : text.slice(0, split);
      const [statusLine = "", ...lines] = headText.split("\r\n");
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(":");
        if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve({ status: Number(statusLine.split(" ")[1] ?? 0), headers, body: split < 0 ? "" : text.slice(split + 4) });
      socket.destroy();
    };
    socket.on("data", (chunk: Buffer) => {
      text += chunk.toString("latin1");
      const split = text.indexOf("\r\n\r\n");
      if (split < 0) return;
      if (/^HTTP\/1\.1 101/.test(text)) return finish();
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(text.slice(0, split));
      if (length !== null && text.length - split - 4 >= Number(length[1])) finish();
    });
    socket.on("end", finish);
    socket.on("error", reject);
    socket.write(`${head}\r\n\r\n`);
  });
}

/** The request head of an upgrade to the session endpoint, with `overrides` applied (null removes a header). */
export function upgradeHead(httpUrl: string, overrides: Record<string, string | null> = {}, method = "GET", path = SESSION_PATH): string {
  const { host } = new URL(httpUrl);
  const headers: Record<string, string | null> = {
    host,
    connection: "Upgrade",
    upgrade: "websocket",
    "sec-websocket-version": "13",
    "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
    "sec-websocket-protocol": SUBPROTOCOL,
    authorization: `Bearer ${TOKEN}`,
    ...overrides,
  };
  const lines = Object.entries(headers).flatMap(([name, value]) => (value === null ? [] : [`${name}: ${value}`]));
  return [`${method} ${path} HTTP/1.1`, ...lines].join("\r\n");
}
