/**
 * The session endpoint under the base URL a user gives the kit: the base's
 * path is kept (a server behind a gateway may live under a prefix), and the
 * protocol's path is appended to it. Every check reaches the server through
 * this one function, so no check tests a different endpoint than the rest.
 */
import { SESSION_PATH } from "@golem-stream/wire";

/** `ws://host:port/prefix` (with or without a trailing slash) → `ws://host:port/prefix/v1/agents/invoke-agent-session`. */
export function sessionEndpoint(baseUrl: string): string {
  return `${baseUrl.replace(/\/+$/, "")}${SESSION_PATH}`;
}
