/** Keys, signed tokens, a JWKS served over loopback HTTP, and a recording logger for the JWT tests. */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, base64url, type CryptoKey, type JWK, type JWTPayload } from "jose";
import WebSocket from "ws";
import { SESSION_PATH, SUBPROTOCOL } from "@golem-stream/wire";
import type { Logger } from "../../src/index.js";

export const ISSUER = "https://issuer.example";
export const AUDIENCE = "golem-stream-tests";
/**
 * The marker the log check looks for in every claim value it sends (no claim value may reach a
 * log). Not hexadecimal: the logs hold random session ids, and a hex marker turned up inside one
 * of them now and then.
 */
export const CLAIM_MARKER = "qz7x";
/** The default `sub`, marked. */
export const SUBJECT = `subject-${CLAIM_MARKER}`;

export interface SigningKey {
  readonly kid: string;
  readonly alg: "RS256" | "ES256" | "EdDSA";
  readonly privateKey: CryptoKey;
  readonly jwk: JWK;
  /** The public key as PEM text (what an HS256 forgery uses as its secret). */
  readonly spki: string;
}

export async function signingKey(kid: string, alg: SigningKey["alg"]): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { kid, alg, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: "sig" }, spki: await exportSPKI(publicKey) };
}

const nowSeconds = (): number => Math.floor(Date.now() / 1000);

/** A token signed by `key`, valid for 10 minutes from now, for `sub` `alice` at ISSUER and AUDIENCE; `claims` add or override. */
export async function sign(key: SigningKey, claims: JWTPayload = {}, header: Record<string, unknown> = {}): Promise<string> {
  const payload: JWTPayload = { iss: ISSUER, aud: AUDIENCE, sub: SUBJECT, iat: nowSeconds(), exp: nowSeconds() + 600, ...claims };
  for (const [name, value] of Object.entries(payload)) if (value === undefined) delete payload[name];
  return new SignJWT(payload).setProtectedHeader({ alg: key.alg, kid: key.kid, typ: "JWT", ...header }).sign(key.privateKey);
}

/** An unsecured token (`alg: none`) naming `kid`. */
export function unsecured(kid: string, claims: JWTPayload = {}): string {
  const part = (value: unknown): string => base64url.encode(JSON.stringify(value));
  return `${part({ alg: "none", typ: "JWT", kid })}.${part({ iss: ISSUER, aud: AUDIENCE, sub: SUBJECT, exp: nowSeconds() + 600, ...claims })}.`;
}

/** An HS256 token whose HMAC secret is `key`'s public key PEM: the algorithm-confusion forgery. */
export async function hmacWithPublicKey(key: SigningKey): Promise<string> {
  return new SignJWT({ iss: ISSUER, aud: AUDIENCE, sub: SUBJECT, exp: nowSeconds() + 600 })
    .setProtectedHeader({ alg: "HS256", kid: key.kid, typ: "JWT" })
    .sign(new TextEncoder().encode(key.spki));
}

/** A JWKS on loopback HTTP whose keys a test replaces, counting the fetches it answers. */
export class JwksServer {
  keys: JWK[];
  fetches = 0;
  /** Answer every fetch with this status instead (a key source that is down). */
  failWith: number | undefined;
  /** Hold every fetch unanswered (an identity provider that hangs) until `release`. */
  hold = false;
  readonly #held: (() => void)[] = [];
  #onHeld: (() => void) | undefined;
  /** Answer every fetch with this many bytes of padding after the key set, sent without a length. */
  padding = 0;
  readonly #server: Server;

  private constructor(keys: JWK[]) {
    this.keys = keys;
    this.#server = createServer((request, response) => {
      this.fetches++;
      if (this.hold) {
        this.#held.push(() => this.#server.emit("request", request, response));
        this.fetches--;
        this.#onHeld?.();
        return;
      }
      if (this.failWith !== undefined) {
        response.writeHead(this.failWith).end();
        return;
      }
      const body = JSON.stringify({ keys: this.keys });
      if (this.padding > 0) {
        response.writeHead(200, { "content-type": "application/json" });
        response.end(body + " ".repeat(this.padding));
        return;
      }
      response.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body);
    });
  }

  static async start(keys: JWK[]): Promise<JwksServer> {
    const jwks = new JwksServer(keys);
    await new Promise<void>((resolve) => jwks.#server.listen(0, "127.0.0.1", resolve));
    return jwks;
  }

  /** Resolves once a fetch is held (at once if one is). */
  heldFetch(): Promise<void> {
    if (this.#held.length > 0) return Promise.resolve();
    return new Promise((resolve) => (this.#onHeld = resolve));
  }

  /** Answers the fetches held so far, as the server is now. */
  release(): void {
    this.hold = false;
    for (const answer of this.#held.splice(0)) answer();
  }

  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/jwks.json`;
  }

  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}

/** Every line given to it, in order. */
export function recordingLogger(): Logger & { readonly lines: unknown[][] } {
  const lines: unknown[][] = [];
  const record = (level: string) => (message: string, fields?: unknown) => void lines.push([level, message, fields]);
  return { lines, debug: record("debug"), info: record("info"), warn: record("warn"), error: record("error") };
}

/** The upgrade's HTTP refusal, or "open" when the WebSocket was accepted. */
export function handshake(url: string, token: string): Promise<{ status: number; body: unknown } | "open"> {
  return new Promise((resolve) => {
    const socket = new WebSocket(`${url}${SESSION_PATH}`, [SUBPROTOCOL], { headers: { authorization: `Bearer ${token}` } });
    socket.on("open", () => {
      socket.close();
      resolve("open");
    });
    socket.on("unexpected-response", (_request, response) => {
      let body = "";
      response.on("data", (chunk: Buffer) => (body += chunk.toString()));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(body) as unknown }));
    });
    socket.on("error", () => undefined);
  });
}

export const UNAUTHENTICATED = { status: 401, body: { code: "unauthenticated", error: "the bearer token is not valid" } };
