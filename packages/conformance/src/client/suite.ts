/** Every scenario of the client suite, in report order. */
import type { Scenario } from "./scenario.js";
import { inputScenarios } from "./scenarios/inputs.js";
import { outputScenarios } from "./scenarios/outputs.js";

export function clientScenarios(): Scenario[] {
  return [...outputScenarios, ...inputScenarios];
}
