/**
 * The plain HTTP requests a server answers (everything but the WebSocket
 * upgrade): the Host check against DNS rebinding, the operations endpoints
 * (`/metrics`, `/healthz`, `/readyz`), the catalogue (discovery, with the
 * browser extension's origin check and CORS), the session path's refusal of
 * a request that is no upgrade, and, on the server's own listener, the
 * embedder's `pages` before a 404. On a user's `http.Server` (`attach`),
 * paths that are not ours are left alone.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { ProtocolError, SESSION_PATH } from "@golem-stream/wire";
import type { Logger } from "../options.js";
import type { PageHandler } from "../server-options.js";
import { handleOperationsRequest, isOperationsPath, type OperationsEndpoints } from "../observability/http-endpoints.js";
import type { ServerObserver } from "../observability/server-observer.js";
import type { BrowserAccess } from "./browser-access.js";
import { DISCOVERY_PATH, handleDiscovery, type DiscoveryDeps } from "./discovery.js";
import type { HostCheck } from "./host-check.js";
import { sendHttpError } from "./http-handshake.js";

export interface HttpRoutes {
  readonly operations: OperationsEndpoints;
  readonly hosts: HostCheck;
  readonly browsers: BrowserAccess | undefined;
  readonly discovery: DiscoveryDeps;
  readonly pages: PageHandler | undefined;
  readonly observer: ServerObserver;
  readonly logger: Logger;
}

/** Answers `request`; `owned`: on the server's own listener, where every path is ours. */
export async function routeRequest(routes: HttpRoutes, request: IncomingMessage, response: ServerResponse, owned: boolean): Promise<void> {
  const url = parseRequestUrl(request);
  const ours = owned || (url !== undefined && (url.pathname === DISCOVERY_PATH || isOperationsPath(url.pathname, routes.operations)));
  if (ours && url?.pathname !== SESSION_PATH && !routes.hosts.allows(request)) {
    sendHttpError(
      response,
      new ProtocolError("forbidden", "this server does not answer to that Host name (see publicHosts, serve --public-host)"),
    );
    return;
  }
  if (url !== undefined && (await handleOperationsRequest(url.pathname, request, response, routes.operations))) return;
  if (url === undefined) {
    if (owned) sendHttpError(response, new ProtocolError("not-found", "no such endpoint"));
  } else if (url.pathname === SESSION_PATH) {
    sendHttpError(response, new ProtocolError("not-a-websocket", "this endpoint requires a WebSocket upgrade"));
  } else if (url.pathname === DISCOVERY_PATH) {
    const browsers = routes.browsers;
    if (browsers !== undefined) {
      try {
        browsers.checkOrigin(request);
      } catch (error) {
        routes.observer.attachRejected((error as ProtocolError).code, "discover");
        sendHttpError(response, error as ProtocolError);
        return;
      }
      if (browsers.answerCors(request, response)) return;
    }
    await handleDiscovery(request, response, url, routes.discovery);
  } else if (owned) {
    const pages = routes.pages;
    if (pages !== undefined && (await servePage(routes.logger, pages, request, response))) return;
    sendHttpError(response, new ProtocolError("not-found", "no such endpoint"));
  }
}

/** The request target as a URL, or undefined when it does not parse. */
export function parseRequestUrl(request: IncomingMessage): URL | undefined {
  try {
    return new URL(request.url ?? "/", "http://localhost");
  } catch {
    return undefined;
  }
}

/** A page handler that throws answers 500 (or drops a response already begun); it never takes the server down. */
async function servePage(logger: Logger, pages: PageHandler, request: IncomingMessage, response: ServerResponse): Promise<boolean> {
  try {
    return await pages(request, response);
  } catch (error) {
    logger.error("page handler failed", { event: "http.page-failed", error: String(error) });
    if (!response.headersSent) sendHttpError(response, new ProtocolError("internal-error", "internal error"));
    else response.destroy();
    return true;
  }
}
