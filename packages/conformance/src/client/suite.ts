/** Every scenario of the client suite, in report order. */
import type { Scenario } from "./scenario.js";
import { outputScenarios } from "./scenarios/outputs.js";

export function clientScenarios(): Scenario[] {
  return [...outputScenarios];
}
