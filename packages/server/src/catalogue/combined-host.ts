/**
 * Several agent hosts served as one: each application environment belongs
 * to the first host that knows it. This is how the demo is served beside a
 * user's agents (`serve --agents … --demo`) without either knowing the other.
 */
import type { AgentHost, AgentTypeDescriptor, ApplicationEnvironment, InvocationContext } from "../agent-host.js";
import type { SchemaValueJson } from "@golem-stream/wire";

export class CombinedAgentHost implements AgentHost {
  readonly #hosts: readonly AgentHost[];

  constructor(hosts: readonly AgentHost[]) {
    this.#hosts = hosts;
  }

  agentTypes(application: string, environment: string): readonly AgentTypeDescriptor[] | undefined {
    for (const host of this.#hosts) {
      const types = host.agentTypes(application, environment);
      if (types !== undefined) return types;
    }
    return undefined;
  }

  /** Those of every host that lists its own, each once (the first host's wins, as in `agentTypes`). */
  environments(): readonly ApplicationEnvironment[] {
    const seen = new Set<string>();
    return this.#hosts
      .flatMap((host) => host.environments?.() ?? [])
      .filter(({ application, environment }) => {
        const key = JSON.stringify([application, environment]);
        if (seen.has(key)) return false;
        seen.add(key);
        return true;
      });
  }

  invoke(context: InvocationContext): Promise<SchemaValueJson | undefined> {
    const owner = this.#hosts.find((host) => host.agentTypes(context.application, context.environment) !== undefined);
    if (owner === undefined) return Promise.reject(new Error("method has no implementation"));
    return owner.invoke(context);
  }
}
