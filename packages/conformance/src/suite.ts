/** Every check of the server suite, in report order. */
import type { Check } from "./check.js";
import { authorizationChecks } from "./checks/authorization.js";
import { backpressureChecks } from "./checks/backpressure.js";
import { cancelChecks } from "./checks/cancel.js";
import { channelChecks } from "./checks/channels.js";
import { decodingChecks } from "./checks/decoding.js";
import { firstMessageChecks } from "./checks/first-message.js";
import { handshakeChecks } from "./checks/handshake.js";
import { idempotencyChecks } from "./checks/idempotency.js";
import { limitChecks } from "./checks/limits.js";
import { livenessChecks } from "./checks/liveness.js";
import { methodChecks } from "./checks/methods.js";
import { restartChecks } from "./checks/restart.js";
import { resumeChecks } from "./checks/resume.js";
import { revocationChecks } from "./checks/revocation.js";
import { schemaChecks } from "./checks/schema.js";

export function serverChecks(): Check[] {
  return [
    ...handshakeChecks,
    ...firstMessageChecks,
    ...decodingChecks(),
    ...schemaChecks,
    ...methodChecks(),
    ...channelChecks,
    ...idempotencyChecks,
    ...resumeChecks,
    ...revocationChecks,
    ...cancelChecks,
    ...limitChecks,
    ...authorizationChecks,
    ...livenessChecks,
    ...backpressureChecks,
    ...restartChecks,
  ];
}
