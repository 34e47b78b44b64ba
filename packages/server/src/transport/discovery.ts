/**
 * `GET /v1/agents/types?application=..&environment=..`: the read-only
 * catalogue the CLI uses to build typed invocations. It is outside the
 * frozen session protocol (see docs/protocol/server.md for the format).
 * Authenticated like the session endpoint and authorized as `discover`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { ProtocolError, type JsonValue } from "@golem-stream/wire";
import { CATALOGUE_TEXT } from "../catalogue/catalogue-text.js";
import { canonicalJson } from "@golem-stream/wire";
import type { AgentHost } from "../agent-host.js";
import { authenticate, sendHttpError, sendJson } from "./http-handshake.js";
import type { Authenticator, Authorizer, Logger, Principal } from "../options.js";
import type { AuthThrottle } from "./auth-throttle.js";

export const DISCOVERY_PATH = "/v1/agents/types";

export interface DiscoveryDeps {
  readonly host: AgentHost;
  readonly authenticator: Authenticator;
  readonly authorizer: Authorizer;
  readonly logger: Logger;
  /** `limits.maxCallerIdentityBytes`: the same identity check as the session endpoint. */
  readonly maxCallerIdentityBytes: number;
  /** Told of every refused request, with its public code (logged and counted like a refused upgrade). */
  readonly rejected: (code: ProtocolError["code"]) => void;
  /** Failed authentications per address: a throttled address is refused before the authenticator runs. */
  readonly throttle: AuthThrottle;
}

export async function handleDiscovery(request: IncomingMessage, response: ServerResponse, url: URL, deps: DiscoveryDeps): Promise<void> {
  try {
    // HEAD as GET, its body left out by Node (RFC 9110 section 9.3.2: wherever GET is served).
    if (request.method !== "GET" && request.method !== "HEAD")
      throw new ProtocolError("invalid-message", "only GET and HEAD are supported here");
    const address = request.socket.remoteAddress;
    const admission = await deps.throttle.admit(address);
    const caller = await authenticate(request, deps.authenticator, deps.logger, deps.maxCallerIdentityBytes).then(
      (authenticated) => {
        admission.settled();
        return authenticated;
      },
      (error: unknown) => {
        admission.settled(error);
        throw error;
      },
    );
    const application = url.searchParams.get("application");
    const environment = url.searchParams.get("environment");
    if (application === null || environment === null || application === "" || environment === "") {
      throw new ProtocolError("validation-error", "application and environment query parameters are required");
    }
    const allowed = await deps.authorizer({ caller, operation: "discover", application, environment });
    if (allowed !== true) throw new ProtocolError("forbidden", "the caller may not read this catalogue");
    const types = deps.host.agentTypes(application, environment);
    if (types === undefined) {
      const served = await readableEnvironments(deps, caller);
      throw new ProtocolError(
        "not-found",
        `the application or environment does not exist${served.length === 0 ? "" : `; this server serves ${served.join(", ")}`}`,
      );
    }
    const body: JsonValue = {
      application,
      environment,
      agentTypes: types.map((type) => ({
        name: type.name,
        constructorParameters: type.constructorParameters,
        methods: type.methods.map((method) => ({
          name: method.name,
          parameters: method.parameters,
          ...(method.result === undefined ? {} : { result: method.result }),
        })),
        config: type.config.map((entry) => ({ path: [...entry.path] })),
      })),
    };
    sendJson(response, 200, canonicalJson(body, CATALOGUE_TEXT));
  } catch (error) {
    if (!(error instanceof ProtocolError)) deps.logger.error("discovery failed", { event: "discovery.failed", error: String(error) });
    const failure = error instanceof ProtocolError ? error : new ProtocolError("internal-error", "internal error");
    deps.rejected(failure.code);
    sendHttpError(response, failure);
  }
}

/** At most this many application environments are named in a `not-found`, and twice as many asked about. */
const MAX_NAMED_ENVIRONMENTS = 10;
const PLAIN_NAME = /^[A-Za-z0-9._-]+$/;

/**
 * The application environments the host serves that `caller` may read (the authorizer's
 * `discover`, as for the catalogue itself, so a refused caller learns no name): what a caller who
 * asked for another one most likely meant (`types` without `-a` against a server of your own
 * agents asks for the demo). Empty when the host cannot list them.
 */
async function readableEnvironments(deps: DiscoveryDeps, caller: Principal): Promise<string[]> {
  const named: string[] = [];
  for (const { application, environment } of (deps.host.environments?.() ?? []).slice(0, 2 * MAX_NAMED_ENVIRONMENTS)) {
    // A refusal the authorizer throws (or rejects with) is a refusal: this is only a hint.
    const allowed = await (async () => deps.authorizer({ caller, operation: "discover", application, environment }))().catch(() => false);
    if (allowed !== true) continue;
    named.push(
      PLAIN_NAME.test(application) && PLAIN_NAME.test(environment)
        ? `${application}/${environment}`
        : JSON.stringify([application, environment]),
    );
    if (named.length === MAX_NAMED_ENVIRONMENTS) break;
  }
  return named;
}
