import { describe, expect, it } from "vitest";
import { loadSdk, throttledDiagnostics } from "../src/commands/serve-tracing.js";
import { tracingSettings } from "../src/commands/serve-tracing-settings.js";

const ENDPOINT = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" };

describe("serve's OpenTelemetry settings from the environment", () => {
  it.each([
    ["nothing set", {}],
    ["an empty endpoint (empty is unset)", { OTEL_EXPORTER_OTLP_ENDPOINT: " " }],
    ["the exporter none", { ...ENDPOINT, OTEL_TRACES_EXPORTER: "none" }],
    ["the SDK disabled", { ...ENDPOINT, OTEL_SDK_DISABLED: "TRUE" }],
    ["the SDK disabled, exporter otlp", { OTEL_TRACES_EXPORTER: "otlp", OTEL_SDK_DISABLED: "true" }],
  ])("exports nothing with %s", (_, env) => {
    expect(tracingSettings(env)).toBeUndefined();
  });

  it("exports to the endpoint's /v1/traces when only an endpoint is set", () => {
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" })).toEqual({
      endpoint: "http://collector:4318/v1/traces",
      protocol: "http/protobuf",
      serviceName: "golem-stream",
      sampler: { name: "parentbased_always_on", ratio: 1 },
      batch: {},
    });
  });

  it("takes the traces endpoint as it is, over the general one, and never shows its credentials", () => {
    const settings = tracingSettings({
      ...ENDPOINT,
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://user:s3cret@traces.example:443/otlp/traces",
    });
    expect(settings?.endpoint).toBe("https://traces.example/otlp/traces");
  });

  it("exports to the specification's default endpoint when the exporter is asked for by name", () => {
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: "otlp" })?.endpoint).toBe("http://localhost:4318/v1/traces");
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: " none , otlp" })?.endpoint).toBe("http://localhost:4318/v1/traces");
  });

  it("sends protobuf unless JSON is asked for, the traces' variable over the general one; names the service", () => {
    expect(tracingSettings({ ...ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" })?.protocol).toBe("http/json");
    const both = { ...ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: "grpc", OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/protobuf" };
    expect(tracingSettings(both)?.protocol).toBe("http/protobuf");
    expect(tracingSettings({ ...ENDPOINT, OTEL_SERVICE_NAME: "streams" })?.serviceName).toBe("streams");
  });

  it("reads the sampler, its ratio and the batch processor's settings", () => {
    const settings = tracingSettings({
      ...ENDPOINT,
      OTEL_TRACES_SAMPLER: "ParentBased_TraceIdRatio",
      OTEL_TRACES_SAMPLER_ARG: "0.25",
      OTEL_BSP_SCHEDULE_DELAY: "0",
      OTEL_BSP_MAX_QUEUE_SIZE: "100",
      OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "100",
      OTEL_BSP_EXPORT_TIMEOUT: "2000",
    });
    expect(settings?.sampler).toEqual({ name: "parentbased_traceidratio", ratio: 0.25 });
    expect(settings?.batch).toEqual({ scheduledDelayMillis: 0, maxQueueSize: 100, maxExportBatchSize: 100, exportTimeoutMillis: 2000 });
  });

  it.each([
    [{ OTEL_TRACES_EXPORTER: "zipkin" }, "OTEL_TRACES_EXPORTER=zipkin: serve exports traces with otlp only (or none)"],
    [
      { ...ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" },
      "OTEL_EXPORTER_OTLP_PROTOCOL=grpc: serve sends OTLP over HTTP, as http/protobuf",
    ],
    [{ ...ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http" }, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http: serve sends OTLP over HTTP"],
    [{ ...ENDPOINT, OTEL_EXPORTER_OTLP_TIMEOUT: "abc" }, "OTEL_EXPORTER_OTLP_TIMEOUT=abc: milliseconds, a whole number of at least 1"],
    [{ ...ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: "0" }, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT=0: milliseconds"],
    [{ ...ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_COMPRESSION: "zstd" }, "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION=zstd: gzip or none"],
    [{ ...ENDPOINT, OTEL_EXPORTER_OTLP_COMPRESSION: "GZIP" }, "OTEL_EXPORTER_OTLP_COMPRESSION=GZIP: gzip or none"],
    [{ ...ENDPOINT, OTEL_TRACES_SAMPLER: "jaeger_remote" }, "OTEL_TRACES_SAMPLER=jaeger_remote: serve knows always_on"],
    [{ ...ENDPOINT, OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "1.5" }, "a number from 0 to 1"],
    [{ ...ENDPOINT, OTEL_BSP_MAX_QUEUE_SIZE: "0" }, "OTEL_BSP_MAX_QUEUE_SIZE=0: spans, a whole number of at least 1, e.g. 2048"],
    [{ ...ENDPOINT, OTEL_BSP_SCHEDULE_DELAY: "5s" }, "OTEL_BSP_SCHEDULE_DELAY=5s: milliseconds, a whole number, e.g. 5000"],
    [{ ...ENDPOINT, OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "4096" }, "must not exceed OTEL_BSP_MAX_QUEUE_SIZE"],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }, "an OTLP/HTTP endpoint is an http:// or https:// URL"],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "not a url" }, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=not a url: not a URL"],
  ])("refuses what it cannot honour, as a usage error: %j", (env, message) => {
    expect(() => tracingSettings(env)).toThrow(expect.objectContaining({ exitCode: 2, message: expect.stringContaining(message) }));
  });

  it("ignores a sampler's argument the sampler takes none of", () => {
    expect(tracingSettings({ ...ENDPOINT, OTEL_TRACES_SAMPLER: "always_off", OTEL_TRACES_SAMPLER_ARG: "x" })?.sampler).toEqual({
      name: "always_off",
      ratio: 1,
    });
  });
});

describe("the SDK's diagnostics in serve's log", () => {
  it("logs a failed export (its message and code, where it went) and a warning each at once, then each at most once a minute", () => {
    const lines: { message: string; fields: Readonly<Record<string, unknown>> | undefined }[] = [];
    const record = (message: string, fields?: Readonly<Record<string, unknown>>) => void lines.push({ message, fields });
    const diagnostics = throttledDiagnostics(
      { debug: record, info: record, warn: record, error: record },
      "http://collector:4318/v1/traces",
    );
    diagnostics.warn("Configuration: OTEL_EXPORTER_OTLP_TIMEOUT is invalid");
    // As the SDK's global error handler hands a failed export over: the JSON of the error's properties.
    diagnostics.error(
      JSON.stringify({ stack: "OTLPExporterError: Not Found\n    at …", message: "Not Found", code: "404", name: "OTLPExporterError" }),
    );
    diagnostics.error("export failed", Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:4318"), { code: "ECONNREFUSED" }));
    diagnostics.warn("another warning");
    diagnostics.info("not logged");
    expect(lines).toEqual([
      {
        message: "the OpenTelemetry SDK warns",
        fields: { event: "tracing.warning", error: "Configuration: OTEL_EXPORTER_OTLP_TIMEOUT is invalid" },
      },
      {
        message: "traces not exported",
        fields: { event: "tracing.export-failed", endpoint: "http://collector:4318/v1/traces", error: "Not Found (404)" },
      },
    ]);
  });
});

describe("the SDK's packages", () => {
  const notFound = () =>
    Promise.reject(Object.assign(new Error("Cannot find package '@opentelemetry/sdk-trace'"), { code: "ERR_MODULE_NOT_FOUND" }));

  it.each([
    ["http/protobuf", "@opentelemetry/exporter-trace-otlp-proto@0.223"],
    ["http/json", "@opentelemetry/exporter-trace-otlp-http@0.223"],
  ] as const)("one missing: a usage error with the whole install line, %s's exporter in it", async (protocol, exporter) => {
    const line = `npm install -g @opentelemetry/api@1 @opentelemetry/sdk-trace@2 @opentelemetry/resources@2 ${exporter}`;
    await expect(loadSdk(protocol, notFound)).rejects.toMatchObject({ exitCode: 2, message: expect.stringContaining(line) });
  });

  it("another failure to load is told as it is; the installed ones load", async () => {
    await expect(loadSdk("http/json", () => Promise.reject(new Error("bad module")))).rejects.toMatchObject({
      exitCode: 2,
      message: "cannot load the OpenTelemetry SDK: bad module",
    });
    expect(typeof (await loadSdk("http/protobuf")).exporter).toBe("function");
  });
});

describe("a failed export in the log's words", () => {
  it("is the error's message and code, not the JSON of its stack", () => {
    const lines: Readonly<Record<string, unknown>>[] = [];
    const record = (_message: string, fields?: Readonly<Record<string, unknown>>) => void lines.push(fields ?? {});
    throttledDiagnostics({ debug: record, info: record, warn: record, error: record }, "e").error(
      "export failed:",
      Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:4318"), { code: "ECONNREFUSED" }),
    );
    expect(lines[0]?.["error"]).toBe("export failed: connect ECONNREFUSED 127.0.0.1:4318");
    throttledDiagnostics({ debug: record, info: record, warn: record, error: record }, "e").error("{not json");
    expect(lines[1]?.["error"]).toBe("{not json");
  });
});
