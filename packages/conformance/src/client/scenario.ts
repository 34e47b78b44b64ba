/** What a client scenario is: one rule of the protocol, checked from the scripted server's side and the adapter's reports. */
import type { RunnableCheck } from "../run-checks.js";
import type { ClientContext } from "./context.js";

/** Sections of the client suite, for `--only` / `--skip`. */
export const CLIENT_SECTIONS = [
  "handshake",
  "outputs",
  "bytes",
  "inputs",
  "attempts",
  "violations",
  "lifecycle",
  "takeover",
  "restart",
  "backpressure",
] as const;
export type ClientSection = (typeof CLIENT_SECTIONS)[number];

export interface Scenario extends RunnableCheck<ClientContext> {
  /** Stable id, `<section>.<name>`. */
  readonly id: string;
  readonly section: ClientSection;
  /** The protocol section or decision verified. */
  readonly ref: string;
  /** The rule, as what a conforming client does. */
  readonly expectation: string;
}

export type ScenarioSpec = Omit<Scenario, "section" | "id"> & { readonly name: string };

/** Each scenario also fails on anything unclean it left behind (see `ClientContext.ensureClean`). */
export function defineScenarios(section: ClientSection, specs: readonly ScenarioSpec[]): Scenario[] {
  return specs.map(({ name, run, ...rest }) => ({
    ...rest,
    id: `${section}.${name}`,
    section,
    run: async (ctx) => {
      const saw = await run(ctx);
      ctx.ensureClean();
      return saw;
    },
  }));
}
