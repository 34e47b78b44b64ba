/**
 * OpenTelemetry traces from `golem-stream serve`, set up by the environment
 * variables every OpenTelemetry SDK reads (serve-tracing-settings.ts), so
 * that an operator points serve at a collector the way they point any other
 * service at it: no code of their own, no `--import` of an SDK. The SDK's
 * packages are optional peers of the CLI, like the server itself, loaded
 * only when traces are asked for.
 */
import type { TracerProvider as TracerProviderApi } from "@opentelemetry/api";
import type { Sampler } from "@opentelemetry/sdk-trace";
import { CLI_VERSION } from "../cli-version.js";
import { usageError } from "../exit-codes.js";
import { DEFAULT_SERVICE_NAME, tracingSettings, type Env, type OtlpProtocol, type TracingSettings } from "./serve-tracing-settings.js";
import type { CliLogger } from "../io/logger.js";

/** Traces as serve exports them: the provider the server's spans go to, and how to flush it at the end. */
export interface ServeTracing {
  readonly tracerProvider: TracerProviderApi;
  /** The banner's line: where traces go (no credentials, no headers). */
  readonly description: string;
  /** Exports what is still queued, then stops; never rejects. */
  shutdown(): Promise<void>;
}

/** How often, at most, a failing export (or another warning of the SDK) is logged: a collector that is down fails every batch. */
const LOG_INTERVAL_MS = 60_000;

/** How long the last export at a stop runs before the log says the stop waits for it. */
const FLUSH_NOTICE_MS = 1_000;

/** The packages traces need, as one `npm install` takes them (the versions this CLI is built against). */
const PACKAGES = {
  api: "@opentelemetry/api@1",
  sdk: "@opentelemetry/sdk-trace@2",
  resources: "@opentelemetry/resources@2",
  "http/protobuf": "@opentelemetry/exporter-trace-otlp-proto@0.223",
  "http/json": "@opentelemetry/exporter-trace-otlp-http@0.223",
} as const;

/**
 * Traces as the environment asks for them (`tracingSettings`), or undefined.
 * Loads the SDK and builds the provider serve hands the server; a cluster
 * node's id becomes `service.instance.id`. Export failures go to `logger`
 * (warn, `tracing.export-failed`), the SDK's other warnings too
 * (`tracing.warning`): each the first at once, then at most once a minute
 * with how many were not logged.
 */
export async function serveTracing(env: Env, logger: CliLogger, nodeId: string | undefined): Promise<ServeTracing | undefined> {
  const settings = tracingSettings(env);
  if (settings === undefined) return undefined;
  const { api, sdk, resources, exporter } = await loadSdk(settings.protocol);
  api.diag.setLogger(throttledDiagnostics(logger, settings.endpoint), { logLevel: api.DiagLogLevel.WARN, suppressOverrideMessage: true });
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the env detector) override serve's own attributes.
  const resource = resources
    .defaultResource()
    .merge(
      resources.resourceFromAttributes({
        "service.name": DEFAULT_SERVICE_NAME,
        "service.version": CLI_VERSION,
        ...(nodeId === undefined ? {} : { "service.instance.id": nodeId }),
      }),
    )
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const processor = new sdk.BatchSpanProcessor({ exporter: new exporter(), ...settings.batch });
  const provider = new sdk.TracerProvider({ resource, sampler: sampler(sdk, settings.sampler), spanProcessors: [processor] });
  return {
    tracerProvider: provider,
    description: `traces to ${settings.endpoint} (OpenTelemetry, OTLP ${settings.protocol}, service ${settings.serviceName})`,
    shutdown: async () => {
      // A collector that does not answer holds the stop for the export's timeout: once that shows, say so.
      const notice = setTimeout(
        () =>
          logger.info("exporting the spans still queued before stopping (a second signal stops at once)", {
            event: "tracing.flushing",
            endpoint: settings.endpoint,
          }),
        FLUSH_NOTICE_MS,
      );
      try {
        await provider.shutdown();
      } catch (error) {
        // Through the throttle: a collector that is down was reported already.
        api.diag.error("traces not all exported at stop:", error);
      } finally {
        clearTimeout(notice);
      }
      api.diag.disable();
    },
  };
}

function sampler(sdk: typeof import("@opentelemetry/sdk-trace"), settings: TracingSettings["sampler"]): Sampler {
  const root = (name: string): Sampler =>
    name === "always_off"
      ? new sdk.AlwaysOffSampler()
      : name === "traceidratio"
        ? new sdk.TraceIdRatioBasedSampler(settings.ratio)
        : new sdk.AlwaysOnSampler();
  if (!settings.name.startsWith("parentbased_")) return root(settings.name);
  return new sdk.ParentBasedSampler({ root: root(settings.name.slice("parentbased_".length)) });
}

/** The SDK's modules serve uses. */
export interface SdkModules {
  readonly api: typeof import("@opentelemetry/api");
  readonly sdk: typeof import("@opentelemetry/sdk-trace");
  readonly resources: typeof import("@opentelemetry/resources");
  readonly exporter: new () => import("@opentelemetry/sdk-trace").SpanExporter;
}

/** Loads all of them at once, the exporter of `protocol` among them. */
function importSdk(protocol: OtlpProtocol): Promise<SdkModules> {
  return Promise.all([
    import("@opentelemetry/api"),
    import("@opentelemetry/sdk-trace"),
    import("@opentelemetry/resources"),
    protocol === "http/json"
      ? import("@opentelemetry/exporter-trace-otlp-http").then((module) => module.OTLPTraceExporter)
      : import("@opentelemetry/exporter-trace-otlp-proto").then((module) => module.OTLPTraceExporter),
  ]).then(([api, sdk, resources, exporter]) => ({ api, sdk, resources, exporter }));
}

/** The SDK's modules, or a usage error naming every package to install when any is missing (`load`: for tests). */
export async function loadSdk(
  protocol: OtlpProtocol,
  load: (protocol: OtlpProtocol) => Promise<SdkModules> = importSdk,
): Promise<SdkModules> {
  try {
    return await load(protocol);
  } catch (error) {
    const missing = (error as { code?: unknown }).code === "ERR_MODULE_NOT_FOUND";
    const needed = [PACKAGES.api, PACKAGES.sdk, PACKAGES.resources, PACKAGES[protocol]].join(" ");
    throw usageError(
      missing
        ? `serve's OpenTelemetry traces (OTEL_* variables) need the SDK's packages beside the CLI: npm install -g ${needed} (or npm install ${needed} in the project that has @golem-stream/cli)`
        : `cannot load the OpenTelemetry SDK: ${error instanceof Error ? error.message : String(error)}`,
      error,
    );
  }
}

/**
 * The SDK reports failed exports (`error`, through its global error handler) and everything else
 * it finds wrong (`warn`) through its diagnostic logger: to the log, each kind at most once a
 * minute, with how many were not logged, so that a warning never hides a failed export.
 */
export function throttledDiagnostics(logger: CliLogger, endpoint: string): import("@opentelemetry/api").DiagLogger {
  const throttled = ({
    event,
    message: text,
    ...fields
  }: {
    readonly event: string;
    readonly message: string;
    readonly endpoint?: string;
  }) => {
    let lastLogged = -Infinity;
    let notLogged = 0;
    return (message: string, ...args: unknown[]): void => {
      const now = Date.now();
      if (now - lastLogged < LOG_INTERVAL_MS) {
        notLogged++;
        return;
      }
      lastLogged = now;
      const error = [message, ...args].map(described).join(" ");
      logger.warn(text, { event, ...fields, error, ...(notLogged > 0 ? { notLogged } : {}) });
      notLogged = 0;
    };
  };
  const quiet = (): void => undefined;
  return {
    error: throttled({ event: "tracing.export-failed", message: "traces not exported", endpoint }),
    warn: throttled({ event: "tracing.warning", message: "the OpenTelemetry SDK warns" }),
    info: quiet,
    debug: quiet,
    verbose: quiet,
  };
}

/**
 * One argument of a diagnostic, in a line's words: the SDK hands a failed export's error over as
 * the JSON of all its properties (its stack, the response's body); the log wants its message and
 * its code (an HTTP status, `ECONNREFUSED`).
 */
function described(argument: unknown): string {
  let error: unknown = argument;
  if (typeof argument === "string" && argument.startsWith("{")) {
    try {
      error = JSON.parse(argument) as unknown;
    } catch {
      return argument;
    }
  }
  if (typeof error !== "object" || error === null) return String(error);
  const { message, code } = error as { message?: unknown; code?: unknown };
  const text = typeof message === "string" && message !== "" ? message : String(error);
  const codeText = typeof code === "string" || typeof code === "number" ? String(code) : "";
  return codeText === "" || text.includes(codeText) ? text : `${text} (${codeText})`;
}
