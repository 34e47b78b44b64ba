/**
 * What `serve` gives browsers: the origins whose pages may open sessions, and the web console's
 * request handler.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { usageError } from "../exit-codes.js";
import type { ServeOptions } from "../options.js";

/**
 * The browser extension: the origins given, and with the console its own
 * origin (the listening address's, added by the server once it listens).
 */
export function browserAccess(options: ServeOptions): {
  browsers?: { allowedOrigins: readonly string[]; allowListeningOrigins?: boolean };
} {
  if (options.console) return { browsers: { allowedOrigins: options.allowOrigin, allowListeningOrigins: true } };
  return options.allowOrigin.length === 0 ? {} : { browsers: { allowedOrigins: options.allowOrigin } };
}

/** The console's request handler; its page was built with the package, so nothing is compiled here. */
export async function loadConsole(): Promise<(request: IncomingMessage, response: ServerResponse) => Promise<boolean>> {
  const { consoleHandler } = await import("@golem-stream/console");
  try {
    return consoleHandler();
  } catch (error) {
    throw usageError(`${error instanceof Error ? error.message : String(error)} (or start with --no-console)`);
  }
}
