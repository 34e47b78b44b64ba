/**
 * What `serve`'s banner says about the agents it serves: one line per
 * application environment of an `--agents` catalogue (or that the module is
 * a host of its own), and the commands to call them from another terminal;
 * the demo's example invocations when the demo is served.
 */
import type { AgentHost, Catalogue } from "@golem-stream/server";
import { printable } from "../io/printable.js";
import { shellWord } from "../io/shell-word.js";
import { briefList } from "../output/brief-list.js";

export interface ServedAgents {
  /** Banner lines after the data directory's. */
  readonly lines: readonly string[];
  /** Example commands, after `export GOLEM_STREAM_URL=…`, spelled with `command` (how the user runs the CLI). */
  calls(command: string): readonly string[];
  /** Whether the demo catalogue is served. */
  readonly demo: boolean;
  /** The console link's query: the first application and environment served, when the demo (the console's default) is not. */
  readonly consoleQuery: string;
}

const demoCalls = (command: string): string[] => [
  `${command} types`,
  `head -c 1000000 /dev/urandom | ${command} invoke echo digest -c '{"name":"me"}' -`,
  `printf 'hello\\nworld\\n' | ${command} invoke echo split -c '{"name":"me"}' -`,
];

/** `file` and `agents` are the `--agents` module and its export; undefined for the demo alone. */
export function describeServedAgents(file: string | undefined, agents: Catalogue | AgentHost | undefined, demo: boolean): ServedAgents {
  if (file === undefined || agents === undefined) return { lines: [], calls: demoCalls, demo: true, consoleQuery: "" };
  const lines: string[] = [];
  const served: [application: string, environment: string][] = [];
  if (!isHost(agents)) {
    for (const [application, environments] of Object.entries(agents.applications)) {
      for (const [environment, types] of Object.entries(environments)) {
        lines.push(
          `agents of ${file}: application ${application}, environment ${environment}: ${briefList(types.map((type) => type.name))}`,
        );
        served.push([application, environment]);
      }
    }
  } else {
    lines.push(`agents of ${file}: an agent host of its own`);
  }
  if (demo) lines.push("demo catalogue: application demo, environment default: echo");
  const calls = (command: string): string[] => [
    ...served.map(([application, environment]) => `${command} types -a ${shellWord(application)} -e ${shellWord(environment)}`),
    ...(demo ? demoCalls(command) : []),
  ];
  const first = served[0];
  const consoleQuery =
    demo || first === undefined ? "" : `?${new URLSearchParams({ application: first[0], environment: first[1] }).toString()}`;
  // The module's names go to a terminal: their control characters are shown escaped, not run.
  return { lines: lines.map(printable), calls: (command) => calls(command).map(printable), demo, consoleQuery };
}

function isHost(agents: Catalogue | AgentHost): agents is AgentHost {
  return typeof (agents as Partial<AgentHost>).invoke === "function";
}
