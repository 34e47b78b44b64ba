/** Raw HTTP probes of the session endpoint's upgrade (protocol section 1), below any WebSocket library's checks. */
import { request } from "node:http";
import { randomBytes } from "node:crypto";
import { sessionEndpoint } from "./endpoint.js";

export interface ProbeOptions {
  readonly token?: string | undefined;
  readonly protocols?: readonly string[] | undefined;
  readonly extensions?: string | undefined;
  /** false: a plain GET without upgrade headers. */
  readonly upgrade?: boolean;
  readonly timeoutMs: number;
  /** Abandons the request (and its connection) when it aborts. */
  readonly signal?: AbortSignal | undefined;
}

export interface ProbeResult {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  /** The HTTP body of a refused upgrade, parsed as JSON when it is JSON. */
  readonly body: unknown;
}

/** Sends one upgrade request and reports the response (101 or an error status) without speaking WebSocket. */
export function probeUpgrade(url: string, options: ProbeOptions): Promise<ProbeResult> {
  if (options.signal?.aborted === true) return Promise.reject(options.signal.reason);
  const target = new URL(sessionEndpoint(url).replace(/^ws/, "http"));
  const headers: Record<string, string> = {};
  if (options.upgrade !== false) {
    headers.connection = "Upgrade";
    headers.upgrade = "websocket";
    headers["sec-websocket-version"] = "13";
    headers["sec-websocket-key"] = randomBytes(16).toString("base64");
    if (options.protocols !== undefined) headers["sec-websocket-protocol"] = options.protocols.join(", ");
    if (options.extensions !== undefined) headers["sec-websocket-extensions"] = options.extensions;
  }
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  return new Promise((resolve, reject) => {
    // agent false: one connection per probe, closed with its answer, instead of an idle keep-alive socket left behind.
    const req = request(target, {
      headers,
      agent: false,
      timeout: options.timeoutMs,
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
    req.on("timeout", () => req.destroy(new Error("timed out waiting for the upgrade response")));
    req.on("error", (error) => reject(options.signal?.aborted === true ? options.signal.reason : error));
    req.on("upgrade", (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, headers: res.headers, body: undefined });
    });
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      // A body cut off (the request abandoned, the server gone) ends the probe instead of leaving it pending.
      res.on("error", (error) => reject(options.signal?.aborted === true ? options.signal.reason : error));
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // not JSON: reported as text
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
      });
    });
    req.end();
  });
}
