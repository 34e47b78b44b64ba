/**
 * The agent host a ready-made server runs (`startEmbeddedServer`, `serve`):
 * the catalogue or host it was given, the demo catalogue beside it when asked,
 * and the demo alone when given neither, so `startEmbeddedServer({ dataDir,
 * tokens })` and a bare `serve` keep serving the demo.
 */
import { StaticAgentHost, type AgentHost } from "../agent-host.js";
import { DEMO_APPLICATION, DEMO_ENVIRONMENT } from "../demo/catalogue.js";
import { createDemoHost } from "../demo/host.js";
import { ECHO_AGENT_TYPE } from "../demo/methods.js";
import type { Catalogue } from "./catalogue.js";
import { CatalogueError } from "./catalogue-error.js";
import { checkAgents, isAgentHost } from "./check-catalogue.js";
import { CombinedAgentHost } from "./combined-host.js";
import { catalogueFingerprint } from "./fingerprint.js";

export interface AgentsOptions {
  /**
   * What to serve: a catalogue of agent types by application and environment
   * (`defineCatalogue`), or an agent host of your own; exactly what a
   * `serve --agents` module exports by default. Default: the demo catalogue.
   */
  readonly agents?: Catalogue | AgentHost;
  /**
   * Serve the demo catalogue (application `demo`, environment `default`,
   * agent type `echo`) too. Default: true without `agents`, false with them.
   */
  readonly demo?: boolean;
}

/** The host for these options; throws `CatalogueError` for a bad catalogue, or a demo environment the agents serve too. */
export function agentsHost(options: AgentsOptions): AgentHost {
  const own = options.agents === undefined ? undefined : hostOf(checkAgents(options.agents));
  const demo = options.demo ?? own === undefined;
  if (own === undefined) {
    if (!demo) throw new TypeError("nothing to serve: give agents, or leave the demo on");
    return createDemoHost();
  }
  if (!demo) return own;
  if (own.agentTypes(DEMO_APPLICATION, DEMO_ENVIRONMENT) !== undefined) {
    throw new CatalogueError(
      `application ${JSON.stringify(DEMO_APPLICATION)}, environment ${JSON.stringify(DEMO_ENVIRONMENT)} is the demo's: rename it, or serve without the demo`,
    );
  }
  return new CombinedAgentHost([own, createDemoHost()]);
}

function hostOf(agents: Catalogue | AgentHost): AgentHost {
  return isAgentHost(agents) ? agents : new StaticAgentHost(agents.applications);
}

/**
 * The fingerprint (`catalogueFingerprint`) of everything these options serve,
 * the demo included when it is; undefined for an `AgentHost` of your own,
 * whose catalogue cannot be listed. Call it on options `agentsHost` accepted.
 */
export function agentsFingerprint(options: AgentsOptions): string | undefined {
  if (options.agents === undefined)
    return catalogueFingerprint({ applications: { [DEMO_APPLICATION]: { [DEMO_ENVIRONMENT]: [ECHO_AGENT_TYPE] } } });
  if (isAgentHost(options.agents)) return undefined;
  const own = options.agents.applications;
  if (options.demo !== true) return catalogueFingerprint({ applications: own });
  // The demo's environment joins the module's application of the same name, if it has one.
  const demo = { ...own[DEMO_APPLICATION], [DEMO_ENVIRONMENT]: [ECHO_AGENT_TYPE] };
  return catalogueFingerprint({ applications: { ...own, [DEMO_APPLICATION]: demo } });
}
