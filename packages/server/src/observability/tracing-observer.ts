/**
 * OpenTelemetry spans through `@opentelemetry/api`: one span per
 * attachment (`golem_stream.attachment`), from the decision that it owns
 * (or replays) the session to its end, with the session's public
 * identifiers as attributes and events for resume, takeover, revocation and
 * violations. Without an SDK registered by the application the API is a
 * no-op and this costs one call per attachment.
 */
import { SpanKind, SpanStatusCode, trace, type TracerProvider } from "@opentelemetry/api";
import type { AttachmentObserver, PartialObserver } from "./server-observer.js";

export const TRACER_NAME = "@golem-stream/server";
export const ATTACHMENT_SPAN = "golem_stream.attachment";

export function tracingObserver(provider?: TracerProvider): PartialObserver {
  const tracer = (provider ?? trace.getTracerProvider()).getTracer(TRACER_NAME);
  return {
    attached: (event): AttachmentObserver => {
      const span = tracer.startSpan(ATTACHMENT_SPAN, {
        kind: SpanKind.SERVER,
        attributes: {
          "golem_stream.session.id": event.session.sessionId,
          "golem_stream.application": event.session.application,
          "golem_stream.environment": event.session.environment,
          "golem_stream.agent_type": event.session.agentType,
          "golem_stream.method": event.session.method,
          "golem_stream.generation": event.generation.toString(),
          "golem_stream.operation": event.operation,
        },
      });
      if (event.operation === "resume" || event.operation === "takeover") span.addEvent(event.operation);
      let open = true;
      return {
        revoked: () => span.addEvent("revocation"),
        violation: (code, closeStatus) => {
          span.addEvent("violation", { "golem_stream.error.code": code, "golem_stream.close_status": closeStatus });
          span.setStatus({ code: SpanStatusCode.ERROR, message: code });
        },
        ended: (reason) => {
          if (!open) return;
          open = false;
          span.setAttribute("golem_stream.attachment.end", reason);
          if (reason === "fault") span.setStatus({ code: SpanStatusCode.ERROR, message: "internal-error" });
          span.end();
        },
      };
    },
  };
}
