/**
 * What `golem-stream serve`'s OpenTelemetry traces are asked to be, read from
 * the environment variables every OpenTelemetry SDK reads (serve-tracing.ts
 * builds the SDK from it). Pure: environment in, settings or a usage error
 * out, before any package is loaded.
 *
 * Traces are exported only when asked for: `OTEL_TRACES_EXPORTER=otlp`, or
 * an OTLP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`,
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) with `OTEL_TRACES_EXPORTER` unset.
 * The specification's default exporter is `otlp` to `localhost:4318`; a
 * serve started without any of these sends nothing anywhere, as before.
 * `OTEL_SDK_DISABLED=true` and `OTEL_TRACES_EXPORTER=none` turn it off.
 *
 * A setting serve cannot honour (another exporter, gRPC, a sampler it does
 * not know, a bad number, an unknown compression) is a usage error at start,
 * before anything listens: a collector that silently receives nothing is
 * found out hours later, and the exporter would only warn of it once.
 */
import { usageError } from "../exit-codes.js";

export const DEFAULT_SERVICE_NAME = "golem-stream";
/** The OTLP/HTTP default endpoint (OpenTelemetry's exporter specification). */
const DEFAULT_ENDPOINT = "http://localhost:4318";

/** What the environment asks for, checked before any package is loaded. */
export interface TracingSettings {
  /** Where spans go, as the exporter derives it, without credentials: for the banner. */
  readonly endpoint: string;
  /** `http/protobuf` (the specification's default) or `http/json`. */
  readonly protocol: OtlpProtocol;
  /** `service.name`: `OTEL_SERVICE_NAME`, else serve's own. */
  readonly serviceName: string;
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

/** Each batch processor variable, its option, what it counts, and an example. */
const BATCH_VARIABLES = [
  ["OTEL_BSP_SCHEDULE_DELAY", "scheduledDelayMillis", "milliseconds", "5000"],
  ["OTEL_BSP_EXPORT_TIMEOUT", "exportTimeoutMillis", "milliseconds", "30000"],
  ["OTEL_BSP_MAX_QUEUE_SIZE", "maxQueueSize", "spans", "2048"],
  ["OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "maxExportBatchSize", "spans", "512"],
] as const satisfies readonly (readonly [string, keyof BatchSettings, string, string])[];

export type Env = Readonly<Record<string, string | undefined>>;

export type OtlpProtocol = "http/protobuf" | "http/json";

/** The exporter's own variables serve checks for it: it would otherwise warn once and send nothing, or use its default. */
const TIMEOUT_VARIABLES = ["OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"] as const;
const COMPRESSION_VARIABLES = ["OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION"] as const;

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
  checkExporterVariables(env);
  return {
    endpoint: shownEndpoint(tracesEndpoint, endpoint),
    protocol: protocolSetting(env),
    serviceName: value(env, "OTEL_SERVICE_NAME") ?? DEFAULT_SERVICE_NAME,
    sampler: samplerSettings(env),
    batch: batchSettings(env),
  };
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
  for (const [variable, option, unit, example] of BATCH_VARIABLES) {
    const text = value(env, variable);
    if (text === undefined) continue;
    const number = Number(text);
    const least = option === "scheduledDelayMillis" ? 0 : 1;
    if (!/^[0-9]+$/.test(text) || !Number.isSafeInteger(number) || number < least)
      throw usageError(`${variable}=${text}: ${unit}, a whole number${least === 0 ? "" : " of at least 1"}, e.g. ${example}`);
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

/** The traces' protocol: the signal's variable over the general one; gRPC is refused (serve has no gRPC exporter). */
function protocolSetting(env: Env): OtlpProtocol {
  for (const name of ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"]) {
    const protocol = value(env, name);
    if (protocol === undefined) continue;
    if (protocol === "http/protobuf" || protocol === "http/json") return protocol;
    throw usageError(`${name}=${protocol}: serve sends OTLP over HTTP, as http/protobuf (the default) or http/json`);
  }
  return "http/protobuf";
}

/** The exporter's timeout and compression, which it would otherwise take as its defaults after a warning. */
function checkExporterVariables(env: Env): void {
  for (const name of TIMEOUT_VARIABLES) {
    const text = value(env, name);
    if (text !== undefined && (!/^[0-9]+$/.test(text) || Number(text) < 1 || !Number.isSafeInteger(Number(text))))
      throw usageError(`${name}=${text}: milliseconds, a whole number of at least 1, e.g. 10000`);
  }
  for (const name of COMPRESSION_VARIABLES) {
    const text = value(env, name);
    if (text !== undefined && text !== "gzip" && text !== "none") throw usageError(`${name}=${text}: gzip or none`);
  }
}

/** A variable's value; an empty one counts as unset, as the OpenTelemetry specification says. */
function value(env: Env, name: string): string | undefined {
  const text = env[name]?.trim();
  return text === undefined || text === "" ? undefined : text;
}
