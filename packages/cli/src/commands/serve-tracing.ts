/**
 * OpenTelemetry traces from `golem-stream serve`, set up by the environment
 * variables every OpenTelemetry SDK reads, so that an operator points serve
 * at a collector the way they point any other service at it: no code of
 * their own, no `--import` of an SDK.
 *
 * Traces are exported only when asked for: `OTEL_TRACES_EXPORTER=otlp`, or
 * an OTLP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`,
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) with `OTEL_TRACES_EXPORTER` unset.
 * The specification's default exporter is `otlp` to `localhost:4318`; a
 * serve started without any of these sends nothing anywhere, as before.
 * `OTEL_SDK_DISABLED=true` and `OTEL_TRACES_EXPORTER=none` turn it off.
 *
 * The SDK packages are optional peers of the CLI, like the server itself,
 * loaded only then. A setting serve cannot honour (another exporter, another
 * OTLP protocol, a sampler it does not know, a bad number) is a usage error
 * at start, before anything listens: a collector that silently receives
 * nothing is found out hours later.
 */
import type { TracerProvider as TracerProviderApi } from "@opentelemetry/api";
import type { Sampler } from "@opentelemetry/sdk-trace";
import { CLI_VERSION } from "../cli-version.js";
import { usageError } from "../exit-codes.js";
import type { CliLogger } from "../io/logger.js";
import { loadOptional } from "../optional-packages.js";

/** Traces as serve exports them: the provider the server's spans go to, and how to flush it at the end. */
export interface ServeTracing {
  readonly tracerProvider: TracerProviderApi;
  /** The banner's line: where traces go (no credentials, no headers). */
  readonly description: string;
  /** Exports what is still queued, then stops; never rejects. */
  shutdown(): Promise<void>;
}

const PURPOSE = "golem-stream serve with OpenTelemetry traces (OTEL_TRACES_EXPORTER / OTEL_EXPORTER_OTLP_ENDPOINT)";
const DEFAULT_SERVICE_NAME = "golem-stream";
/** The OTLP/HTTP default endpoint (OpenTelemetry's exporter specification). */
const DEFAULT_ENDPOINT = "http://localhost:4318";
/** How often, at most, a failing export is logged: a collector that is down fails every batch. */
const EXPORT_ERROR_LOG_INTERVAL_MS = 60_000;

/** What the environment asks for, checked before any package is loaded. */
export interface TracingSettings {
  readonly endpoint: string;
  readonly sampler: { readonly name: string; readonly ratio: number };
  readonly batch: BatchSettings;
}

interface BatchSettings {
  scheduledDelayMillis?: number;
  exportTimeoutMillis?: number;
  maxQueueSize?: number;
  maxExportBatchSize?: number;
}

const SAMPLERS = [
  "always_on",
  "always_off",
  "traceidratio",
  "parentbased_always_on",
  "parentbased_always_off",
  "parentbased_traceidratio",
] as const;

const BATCH_VARIABLES = [
  ["OTEL_BSP_SCHEDULE_DELAY", "scheduledDelayMillis"],
  ["OTEL_BSP_EXPORT_TIMEOUT", "exportTimeoutMillis"],
  ["OTEL_BSP_MAX_QUEUE_SIZE", "maxQueueSize"],
  ["OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "maxExportBatchSize"],
] as const satisfies readonly (readonly [string, keyof BatchSettings])[];

type Env = Readonly<Record<string, string | undefined>>;

/** The settings, or undefined when traces are not asked for; a usage error for a setting serve cannot honour. */
export function tracingSettings(env: Env): TracingSettings | undefined {
  if (value(env, "OTEL_SDK_DISABLED")?.toLowerCase() === "true") return undefined;
  const exporters = value(env, "OTEL_TRACES_EXPORTER")
    ?.split(",")
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== "");
  const tracesEndpoint = value(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  const endpoint = value(env, "OTEL_EXPORTER_OTLP_ENDPOINT");
  if (exporters === undefined || exporters.length === 0) {
    if (tracesEndpoint === undefined && endpoint === undefined) return undefined;
  } else {
    const unknown = exporters.filter((name) => name !== "otlp" && name !== "none");
    if (unknown.length > 0) throw usageError(`OTEL_TRACES_EXPORTER=${unknown.join(",")}: serve exports traces with otlp only (or none)`);
    if (!exporters.includes("otlp")) return undefined;
  }
  const protocol = value(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") ?? value(env, "OTEL_EXPORTER_OTLP_PROTOCOL");
  if (protocol !== undefined && protocol !== "http/json") {
    const name =
      value(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") === undefined ? "OTEL_EXPORTER_OTLP_PROTOCOL" : "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL";
    throw usageError(
      `${name}=${protocol}: serve sends OTLP over HTTP as JSON (http/json), which every OTLP/HTTP receiver accepts; unset it or set http/json`,
    );
  }
  return {
    endpoint: shownEndpoint(tracesEndpoint, endpoint),
    sampler: samplerSettings(env),
    batch: batchSettings(env),
  };
}

/**
 * Traces as the environment asks for them (`tracingSettings`), or undefined.
 * Loads the SDK and builds the provider serve hands the server; a cluster
 * node's id becomes `service.instance.id`. Export failures go to `logger`
 * (warn, `tracing.export-failed`), the first at once and then at most once a
 * minute with how many were not logged.
 */
export async function serveTracing(env: Env, logger: CliLogger, nodeId: string | undefined): Promise<ServeTracing | undefined> {
  const settings = tracingSettings(env);
  if (settings === undefined) return undefined;
  const [api, sdk, resources, exporter] = await Promise.all([
    loadOptional("@opentelemetry/api", PURPOSE, () => import("@opentelemetry/api")),
    loadOptional("@opentelemetry/sdk-trace", PURPOSE, () => import("@opentelemetry/sdk-trace")),
    loadOptional("@opentelemetry/resources", PURPOSE, () => import("@opentelemetry/resources")),
    loadOptional("@opentelemetry/exporter-trace-otlp-http", PURPOSE, () => import("@opentelemetry/exporter-trace-otlp-http")),
  ]);
  api.diag.setLogger(exportFailureLogger(logger), { logLevel: api.DiagLogLevel.WARN, suppressOverrideMessage: true });
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
  const processor = new sdk.BatchSpanProcessor({ exporter: new exporter.OTLPTraceExporter(), ...settings.batch });
  const provider = new sdk.TracerProvider({ resource, sampler: sampler(sdk, settings.sampler), spanProcessors: [processor] });
  return {
    tracerProvider: provider,
    description: `traces to ${settings.endpoint} (OpenTelemetry, OTLP/HTTP JSON, service ${serviceName(env)})`,
    shutdown: async () => {
      try {
        await provider.shutdown();
      } catch (error) {
        // Through the throttle: a collector that is down was reported already.
        api.diag.error("traces not all exported at stop:", error);
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

function samplerSettings(env: Env): TracingSettings["sampler"] {
  const name = (value(env, "OTEL_TRACES_SAMPLER") ?? "parentbased_always_on").toLowerCase();
  if (!(SAMPLERS as readonly string[]).includes(name)) throw usageError(`OTEL_TRACES_SAMPLER=${name}: serve knows ${SAMPLERS.join(", ")}`);
  const argument = value(env, "OTEL_TRACES_SAMPLER_ARG");
  if (!name.endsWith("traceidratio") || argument === undefined) return { name, ratio: 1 };
  const ratio = Number(argument);
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1)
    throw usageError(`OTEL_TRACES_SAMPLER_ARG=${argument}: the ratio of traces sampled is a number from 0 to 1, e.g. 0.25`);
  return { name, ratio };
}

function batchSettings(env: Env): BatchSettings {
  const batch: BatchSettings = {};
  for (const [variable, option] of BATCH_VARIABLES) {
    const text = value(env, variable);
    if (text === undefined) continue;
    const number = Number(text);
    const least = option === "scheduledDelayMillis" ? 0 : 1;
    if (!/^[0-9]+$/.test(text) || !Number.isSafeInteger(number) || number < least)
      throw usageError(`${variable}=${text}: a whole number${least === 0 ? "" : " of at least 1"}, e.g. 512`);
    batch[option] = number;
  }
  if (batch.maxExportBatchSize !== undefined && batch.maxExportBatchSize > (batch.maxQueueSize ?? 2048))
    throw usageError("OTEL_BSP_MAX_EXPORT_BATCH_SIZE must not exceed OTEL_BSP_MAX_QUEUE_SIZE (default 2048)");
  return batch;
}

/** The endpoint the exporter sends to, as it derives it, without any user or password in the URL. */
function shownEndpoint(tracesEndpoint: string | undefined, endpoint: string | undefined): string {
  const text = tracesEndpoint ?? `${(endpoint ?? DEFAULT_ENDPOINT).replace(/\/+$/, "")}/v1/traces`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    const name = tracesEndpoint === undefined ? "OTEL_EXPORTER_OTLP_ENDPOINT" : "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
    throw usageError(`${name}=${tracesEndpoint ?? endpoint ?? ""}: not a URL; e.g. http://collector:4318`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw usageError(`${text}: an OTLP/HTTP endpoint is an http:// or https:// URL`);
  url.username = "";
  url.password = "";
  return url.href;
}

function serviceName(env: Env): string {
  return value(env, "OTEL_SERVICE_NAME") ?? DEFAULT_SERVICE_NAME;
}

/** A variable's value; an empty one counts as unset, as the OpenTelemetry specification says. */
function value(env: Env, name: string): string | undefined {
  const text = env[name]?.trim();
  return text === undefined || text === "" ? undefined : text;
}

/** The SDK reports failed exports through its diagnostic logger: to the log, throttled. */
function exportFailureLogger(logger: CliLogger): import("@opentelemetry/api").DiagLogger {
  let lastLogged = -Infinity;
  let notLogged = 0;
  const report = (message: string, ...args: unknown[]): void => {
    const now = Date.now();
    if (now - lastLogged < EXPORT_ERROR_LOG_INTERVAL_MS) {
      notLogged++;
      return;
    }
    lastLogged = now;
    const detail = args.map((arg) => (arg instanceof Error ? arg.message : String(arg))).join(" ");
    logger.warn("traces not exported", {
      event: "tracing.export-failed",
      error: detail === "" ? message : `${message} ${detail}`,
      ...(notLogged > 0 ? { notLogged } : {}),
    });
    notLogged = 0;
  };
  const quiet = (): void => undefined;
  return { error: report, warn: report, info: quiet, debug: quiet, verbose: quiet };
}
