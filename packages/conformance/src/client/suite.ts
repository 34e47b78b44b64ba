/** Every scenario of the client suite, in report order. */
import type { Scenario } from "./scenario.js";
import { attemptScenarios } from "./scenarios/attempts.js";
import { backpressureScenarios } from "./scenarios/backpressure.js";
import { byteScenarios } from "./scenarios/bytes.js";
import { handshakeScenarios } from "./scenarios/handshake.js";
import { inputScenarios } from "./scenarios/inputs.js";
import { lifecycleScenarios } from "./scenarios/lifecycle.js";
import { outputScenarios } from "./scenarios/outputs.js";
import { restartScenarios } from "./scenarios/restart.js";
import { takeoverScenarios } from "./scenarios/takeover.js";
import { violationScenarios } from "./scenarios/violations.js";

export function clientScenarios(): Scenario[] {
  return [
    ...handshakeScenarios,
    ...outputScenarios,
    ...byteScenarios,
    ...inputScenarios,
    ...attemptScenarios,
    ...violationScenarios,
    ...lifecycleScenarios,
    ...takeoverScenarios,
    ...restartScenarios,
    ...backpressureScenarios,
  ];
}
