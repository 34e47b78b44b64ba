/**
 * A browser reports a failed WebSocket or `fetch` without a reason, so a page cannot tell a server
 * that is down from one that refused the page's origin (its 403 is not readable by the page). The
 * browser transport's and the catalogue request's messages name the second cause too, with the
 * server's option that allows it.
 */

/**
 * What a browser's silence may mean, for a failure it gives no reason for: besides a server that
 * is down or unreachable, one that does not allow this page's origin (the server answers 403,
 * which a page cannot read). Empty outside a page.
 */
export function pageOriginHint(): string {
  const origin = (globalThis as { location?: { origin?: unknown } }).location?.origin;
  if (typeof origin !== "string" || origin === "null") return "";
  return ` (a browser gives no reason: the server may be down, or may not allow this page's origin, ${origin}: golem-stream serve --allow-origin ${origin})`;
}
