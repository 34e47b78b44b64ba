/**
 * The text of a WebSocket opening handshake for the session endpoint, written by hand, for the
 * tests and benches of hostile and silent peers: they send what `ws` never would (no Origin, a
 * wrong token, headers of their own choosing) on a bare TCP socket, and then need not answer.
 */
import { randomBytes } from "node:crypto";
import { SESSION_PATH } from "@golem-stream/wire";

/**
 * `GET` of the session path with a fresh key, then `headerLines` (`Name: value`) after the
 * handshake's own; a `Host` line for `host` unless `headerLines` brings one.
 */
export function upgradeRequest(host: string, headerLines: readonly string[] = []): string {
  const bringsHost = headerLines.some((line) => /^host\s*:/i.test(line));
  return [
    `GET ${SESSION_PATH} HTTP/1.1`,
    ...(bringsHost ? [] : [`Host: ${host}`]),
    "Upgrade: websocket",
    "Connection: Upgrade",
    "Sec-WebSocket-Version: 13",
    `Sec-WebSocket-Key: ${randomBytes(16).toString("base64")}`,
    ...headerLines,
    "",
    "",
  ].join("\r\n");
}
