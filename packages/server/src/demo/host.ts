/** The demo catalogue as an `AgentHost`: application `demo`, environment `default`, agent type `echo`. */
import { StaticAgentHost } from "../agent-host.js";
import { DEMO_APPLICATION, DEMO_ENVIRONMENT } from "./catalogue.js";
import { ECHO_AGENT_TYPE } from "./methods.js";

export function createDemoHost(): StaticAgentHost {
  return new StaticAgentHost({ [DEMO_APPLICATION]: { [DEMO_ENVIRONMENT]: [ECHO_AGENT_TYPE] } });
}
