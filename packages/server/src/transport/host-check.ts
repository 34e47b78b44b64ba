/**
 * Which `Host` the server's plain HTTP endpoints answer (`/metrics`,
 * `/healthz`, `/readyz`, the catalogue, the pages such as the web console),
 * against DNS rebinding: a page of `evil.example` whose name is made to
 * resolve to this server's address may send it requests, and its browser
 * lets it read the answers, but every such request carries
 * `Host: evil.example`. So a request is answered only when its Host names
 * the server: `localhost` (and names under `.localhost`), an IP address
 * literal (a browser sends one only when the page itself was opened by
 * address, which rebinding cannot do; kubelets and load balancers probe
 * by address), or one of the names given as `publicHosts` (the DNS names
 * the server is reached by). A request without Host (HTTP/1.0) is answered.
 *
 * `publicHosts` entries: an exact name (`golem.example.com`), a name with a
 * leading dot for it and every name under it (`.example.com`), or `*` to
 * answer every Host (behind a proxy that checks it).
 */
import type { IncomingMessage } from "node:http";
import { isIP } from "node:net";

export class HostCheck {
  readonly #exact = new Set<string>(["localhost"]);
  readonly #suffixes: string[] = [".localhost"];
  readonly #any: boolean;

  constructor(publicHosts: readonly string[] = []) {
    if (!Array.isArray(publicHosts) || !publicHosts.every((name) => typeof name === "string" && /^(\*|\.?[a-z0-9.-]+)$/i.test(name))) {
      throw new TypeError(
        "options.publicHosts must be an array of host names (golem.example.com, .example.com for every name under it, or *)",
      );
    }
    this.#any = publicHosts.includes("*");
    for (const name of publicHosts) {
      const normal = name.toLowerCase().replace(/\.$/, "");
      if (normal.startsWith(".")) this.#suffixes.push(normal);
      else this.#exact.add(normal);
    }
  }

  /** Whether the request's Host names this server. */
  allows(request: IncomingMessage): boolean {
    const header = request.headers.host;
    if (header === undefined || this.#any) return true;
    const name = hostnameOf(header);
    if (name === undefined) return false;
    if (isIP(name) !== 0 || this.#exact.has(name)) return true;
    return this.#suffixes.some((suffix) => name.endsWith(suffix));
  }
}

/** The name of a Host header (`name`, `name:port`, `[v6]`, `[v6]:port`), lower case and without a trailing dot. */
export function hostnameOf(header: string): string | undefined {
  const match = /^(?:\[([0-9a-f:.]+)\]|([^:[\]]+))(?::\d{1,5})?$/i.exec(header.trim());
  if (match === null) return undefined;
  return (match[1] ?? match[2] ?? "").toLowerCase().replace(/\.$/, "");
}
