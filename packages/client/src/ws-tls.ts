/**
 * `wsTransport({ tls })`: its settings, checked once, and its catalogue
 * request: the global `fetch`, or with `tls` a `GET` through
 * node:https with the transport's own TLS settings, answered as a web
 * `Response` as the global `fetch` answers. The global `fetch` of Node takes
 * no certificate authority of its own, only the process's
 * (`NODE_EXTRA_CA_CERTS`, read at start); a client trusting a private CA for
 * its sockets must trust it for the catalogue too. Either way a refused
 * certificate fails it as the sockets' (`tlsRefusal`).
 */
import { get as httpGet } from "node:http";
import { get as httpsGet } from "node:https";
import { Readable } from "node:stream";
import { X509Certificate } from "node:crypto";
import { createSecureContext, type ConnectionOptions } from "node:tls";
import { ClientError } from "./errors.js";
import { tlsRefusal } from "./tls-refusal.js";
import type { CatalogueRequestInit } from "./transport.js";
import type { WsTlsOptions } from "./ws-tls-options.js";

/** PEM text, or its bytes. */
type Pem = string | Uint8Array;

/**
 * The transport's TLS settings as `tls.connect` takes them, for its sockets and its catalogue
 * requests alike; checked once, member by member, so unreadable PEM is refused here, naming the
 * member that holds it, rather than as a connection failure.
 */
export function tlsSettings(options: WsTlsOptions | undefined): ConnectionOptions | undefined {
  if (options === undefined) return undefined;
  if (typeof options !== "object" || options === null) throw new ClientError("invalid-argument", "wsTransport: tls must be an object");
  const { ca, cert, key, passphrase, servername } = options;
  if (servername !== undefined && typeof servername !== "string")
    throw new ClientError("invalid-argument", "wsTransport: tls.servername must be a string");
  // Node takes any ArrayBufferView where its types say Buffer.
  const settings = { ca, cert, key, passphrase } as ConnectionOptions;
  // A secure context ignores `ca` text that holds no certificate; every connection would then fail
  // verification. Each certificate is read on its own, so the refusal names where it was.
  for (const [member, given] of [
    ["ca", ca],
    ["cert", cert],
  ] as const) {
    const pems = given === undefined ? [] : Array.isArray(given) ? (given as readonly Pem[]) : [given as Pem];
    pems.forEach((pem, index) => {
      const at = Array.isArray(given) ? `tls.${member}[${index}]` : `tls.${member}`;
      refusedAs(`${at} holds no certificate (PEM, "-----BEGIN CERTIFICATE-----")`, () => new X509Certificate(pem as string | Uint8Array));
    });
  }
  if (key !== undefined)
    refusedAs(`tls.key is not a private key this process can read${passphrase === undefined ? "" : " with tls.passphrase"}`, () =>
      createSecureContext({ key, passphrase } as ConnectionOptions),
    );
  refusedAs(cert !== undefined && key !== undefined ? "tls.cert and tls.key cannot be used together" : "tls cannot be used", () =>
    createSecureContext(settings),
  );
  return servername === undefined ? settings : { ...settings, servername };
}

/** Runs `check`; what it throws becomes `invalid-argument` saying `what`, with Node's own reason. */
function refusedAs(what: string, check: () => unknown): void {
  try {
    check();
  } catch (cause) {
    throw new ClientError("invalid-argument", `wsTransport: ${what}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/** Statuses whose response has no body: a web `Response` refuses one. */
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

/**
 * The transport's catalogue request: with `tls`, node:https with those settings, otherwise the
 * global `fetch`; a TLS failure no new attempt can fix rejects as `tlsRefusal` says it.
 */
export function catalogueFetch(tls: ConnectionOptions | undefined): (url: string, init: CatalogueRequestInit) => Promise<Response> {
  const request = tls === undefined ? (url: string, init: CatalogueRequestInit) => fetch(url, init) : tlsCatalogueFetch(tls);
  return async (url, init) => {
    try {
      return await request(url, init);
    } catch (error) {
      throw tlsRefusal(error, url) ?? error;
    }
  };
}

/** A catalogue fetch with `tls` (certificate authorities, client certificate, server name) for `https://`. */
export function tlsCatalogueFetch(tls: ConnectionOptions): (url: string, init: CatalogueRequestInit) => Promise<Response> {
  return (url, init) =>
    new Promise<Response>((resolve, reject) => {
      const target = new URL(url);
      const options = {
        headers: { ...init.headers },
        // One request per catalogue read: a pooled socket would outlive the client's settings.
        agent: false as const,
        ...(init.signal === undefined ? {} : { signal: init.signal }),
      };
      const request = target.protocol === "https:" ? httpsGet(target, { ...options, ...tls }, answer) : httpGet(target, options, answer);
      request.on("error", reject);
      function answer(response: import("node:http").IncomingMessage): void {
        const headers = new Headers();
        for (const [name, value] of Object.entries(response.headers)) {
          if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(", ") : value);
        }
        const status = response.statusCode ?? 500;
        const nullBody = NULL_BODY_STATUSES.has(status);
        if (nullBody) response.resume();
        const body = nullBody ? null : (Readable.toWeb(response) as ReadableStream<Uint8Array>);
        resolve(new Response(body, { status, statusText: response.statusMessage ?? "", headers }));
      }
    });
}
