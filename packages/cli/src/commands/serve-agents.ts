/**
 * What `serve`'s banner says about the agents it serves: one line per
 * application environment of an `--agents` catalogue (or that the module is
 * a host of its own), and the commands to call them from another terminal;
 * the demo's example invocations when the demo is served.
 */
import type { AgentHost, Catalogue } from "@golem-stream/server";
import { shellWord } from "../io/shell-word.js";

export interface ServedAgents {
  /** Banner lines after the data directory's. */
  readonly lines: readonly string[];
  /** Example commands, after `export GOLEM_STREAM_URL=…`. */
  readonly calls: readonly string[];
  /** Whether the demo catalogue is served. */
  readonly demo: boolean;
}

const DEMO_CALLS = [
  `head -c 1000000 /dev/urandom | golem-stream invoke echo digest -c '{"name":"me"}' -`,
  `printf 'hello\\nworld\\n' | golem-stream invoke echo split -c '{"name":"me"}' -`,
];

/** `file` and `agents` are the `--agents` module and its export; undefined for the demo alone. */
export function describeServedAgents(file: string | undefined, agents: Catalogue | AgentHost | undefined, demo: boolean): ServedAgents {
  if (file === undefined || agents === undefined) return { lines: [], calls: ["golem-stream types", ...DEMO_CALLS], demo: true };
  const lines: string[] = [];
  const calls: string[] = [];
  if (!isHost(agents)) {
    for (const [application, environments] of Object.entries(agents.applications)) {
      for (const [environment, types] of Object.entries(environments)) {
        lines.push(`agents of ${file}: application ${application}, environment ${environment}: ${types.map((type) => type.name).join(", ")}`);
        calls.push(`golem-stream types -a ${shellWord(application)} -e ${shellWord(environment)}`);
      }
    }
  } else {
    lines.push(`agents of ${file}: an agent host of its own`);
  }
  if (demo) lines.push("demo catalogue: application demo, environment default: echo");
  return { lines, calls: demo ? [...calls, "golem-stream types", ...DEMO_CALLS] : calls, demo };
}

function isHost(agents: Catalogue | AgentHost): agents is AgentHost {
  return typeof (agents as Partial<AgentHost>).invoke === "function";
}
