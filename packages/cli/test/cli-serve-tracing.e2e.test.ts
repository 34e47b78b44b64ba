/**
 * `golem-stream serve` exporting OpenTelemetry traces, set up by the standard
 * environment variables alone: a real serve process, a real OTLP/HTTP
 * receiver on loopback (what a collector listens with on 4318), and the CLI
 * invoking through it. The attachment's span arrives with serve's resource;
 * a receiver that is down is logged, throttled, and costs serve nothing; a
 * setting serve cannot honour stops it before it listens.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { TOKEN, itemsOf, run, scratchDir, startServe, waitFor } from "./support/processes.js";

interface OtlpAttribute {
  readonly key: string;
  readonly value: { readonly stringValue?: string; readonly intValue?: string | number };
}
interface OtlpSpan {
  readonly name: string;
  readonly attributes?: readonly OtlpAttribute[];
}
interface OtlpExport {
  readonly resourceSpans: readonly {
    readonly resource: { readonly attributes: readonly OtlpAttribute[] };
    readonly scopeSpans: readonly { readonly scope: { readonly name: string }; readonly spans: readonly OtlpSpan[] }[];
  }[];
}

/** An OTLP/HTTP JSON receiver: every export it was sent, and a promise of the first span a test looks for. */
class Receiver {
  readonly exports: OtlpExport[] = [];
  readonly paths: string[] = [];
  /** Every export's body as sent: protobuf's strings are their UTF-8 bytes within it. */
  readonly bodies: Buffer[] = [];
  readonly #server: Server;
  #waiters: (() => void)[] = [];

  constructor() {
    this.#server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        const body = Buffer.concat(chunks);
        const type = request.headers["content-type"] ?? "";
        this.paths.push(`${request.method ?? ""} ${request.url ?? ""} ${type}`);
        this.bodies.push(body);
        if (type === "application/json") this.exports.push(JSON.parse(body.toString("utf8")) as OtlpExport);
        response.writeHead(200, { "content-type": "application/json" }).end("{}");
        for (const wake of this.#waiters.splice(0)) wake();
      });
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  /** Resolves once an export holds a span `matches` accepts, with its resource's attributes. */
  async span(matches: (span: OtlpSpan) => boolean): Promise<{ span: OtlpSpan; resource: Map<string, string> }> {
    for (;;) {
      for (const batch of this.exports)
        for (const { resource, scopeSpans } of batch.resourceSpans)
          for (const { spans } of scopeSpans)
            for (const span of spans) if (matches(span)) return { span, resource: attributes(resource.attributes) };
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }

  /** Resolves once an export's body holds every one of `texts` (a protobuf export, read without its schema). */
  async holding(texts: readonly string[]): Promise<Buffer> {
    for (;;) {
      const found = this.bodies.find((body) => texts.every((text) => body.includes(Buffer.from(text, "utf8"))));
      if (found !== undefined) return found;
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }

  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}

function attributes(list: readonly OtlpAttribute[] | undefined): Map<string, string> {
  return new Map((list ?? []).map(({ key, value }) => [key, String(value.stringValue ?? value.intValue ?? "")]));
}

const receivers: Receiver[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
});

it("OTEL_EXPORTER_OTLP_ENDPOINT alone: each attachment's span reaches the collector as protobuf, with serve's resource", async () => {
  const receiver = new Receiver();
  receivers.push(receiver);
  const endpoint = await receiver.listen();
  const dataDir = join(scratchDir(), "state");
  const server = await startServe(["--port", "0", "--token", TOKEN, "--data-dir", dataDir, "--log-level", "warn"], dataDir, {
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_SERVICE_NAME: "streams-proto", OTEL_BSP_SCHEDULE_DELAY: "0" },
  });
  try {
    expect(server.running.stdout().toString()).toContain(
      `traces to ${endpoint}/v1/traces (OpenTelemetry, OTLP http/protobuf, service streams-proto)`,
    );
    const invoked = await run(["invoke", "echo", "count", "-c", '{"name":"x"}', "2", "0"], { env: server.env });
    expect(itemsOf(invoked.stdout, "$")).toEqual([0, 1]);
    const body = await receiver.holding(["golem_stream.attachment", "golem_stream.method", "count", "service.name", "streams-proto"]);
    expect(body.includes(Buffer.from(TOKEN))).toBe(false);
    expect(receiver.paths[0]).toBe("POST /v1/traces application/x-protobuf");
  } finally {
    const stopped = await server.stop();
    expect(stopped.code, server.running.stderr()).toBe(EXIT.success);
  }
});

it("OTEL_EXPORTER_OTLP_PROTOCOL=http/json: the same span as JSON, its attributes and resource as sent", async () => {
  const receiver = new Receiver();
  receivers.push(receiver);
  const endpoint = await receiver.listen();
  const dataDir = join(scratchDir(), "state");
  const server = await startServe(["--port", "0", "--token", TOKEN, "--data-dir", dataDir, "--log-level", "warn"], dataDir, {
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_SERVICE_NAME: "streams-test",
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment.name=ci",
      // Each batch as soon as a span ends: the test waits for the export, not for a 5 s timer.
      OTEL_BSP_SCHEDULE_DELAY: "0",
    },
  });
  try {
    expect(server.running.stdout().toString()).toContain(
      `traces to ${endpoint}/v1/traces (OpenTelemetry, OTLP http/json, service streams-test)`,
    );
    const invoked = await run(["invoke", "echo", "count", "-c", '{"name":"x"}', "3", "0"], { env: server.env });
    expect(itemsOf(invoked.stdout, "$")).toEqual([0, 1, 2]);
    const { span, resource } = await receiver.span(
      (candidate) =>
        candidate.name === "golem_stream.attachment" && attributes(candidate.attributes).get("golem_stream.method") === "count",
    );
    expect(Object.fromEntries(attributes(span.attributes))).toMatchObject({
      "golem_stream.agent_type": "echo",
      "golem_stream.operation": "start",
    });
    expect(resource.get("service.name")).toBe("streams-test");
    expect(resource.get("deployment.environment.name")).toBe("ci");
    expect(resource.get("service.version")).toMatch(/^\d+\.\d+\.\d+/);
    expect(receiver.paths[0]).toBe("POST /v1/traces application/json");
    expect(JSON.stringify(receiver.exports)).not.toContain(TOKEN);
  } finally {
    const stopped = await server.stop();
    expect(stopped.code, server.running.stderr()).toBe(EXIT.success);
  }
});

it("a collector that is down: serve runs and stops as ever, and says once that traces are not exported", async () => {
  const receiver = new Receiver();
  const endpoint = await receiver.listen();
  await receiver.close(); // nothing listens there any more: every export is refused
  const dataDir = join(scratchDir(), "state");
  const server = await startServe(["--port", "0", "--token", TOKEN, "--data-dir", dataDir, "--log-level", "warn"], dataDir, {
    env: {
      OTEL_TRACES_EXPORTER: "otlp",
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${endpoint}/v1/traces`,
      OTEL_BSP_SCHEDULE_DELAY: "0",
      // A refused connection is retried with backoff until the export's deadline: a short one.
      OTEL_EXPORTER_OTLP_TIMEOUT: "300",
    },
  });
  let stderr = "";
  try {
    for (let call = 0; call < 3; call++) {
      const invoked = await run(["invoke", "echo", "count", "-c", '{"name":"x"}', "2", "0"], { env: server.env });
      expect(itemsOf(invoked.stdout, "$")).toEqual([0, 1]);
    }
    await waitFor(
      server.running,
      () => server.running.stderr().includes('"event":"tracing.export-failed"'),
      "the failed export was logged",
    );
  } finally {
    const stopped = await server.stop();
    stderr = server.running.stderr();
    expect(stopped.code, stderr).toBe(EXIT.success);
  }
  const failures = stderr.split("\n").filter((line) => line.includes('"event":"tracing.export-failed"'));
  // Three invocations, three exports refused, and more at the stop's flush: logged once a minute at most.
  expect(failures.length, stderr).toBe(1);
  expect(failures[0]).toContain('"level":"warn"');
});

it("a collector that never answers: the stop says it is exporting the last spans, then stops once the export times out", async () => {
  const silent = createServer(() => undefined); // takes each request, answers none
  await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
  const endpoint = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
  const dataDir = join(scratchDir(), "state");
  const server = await startServe(["--port", "0", "--token", TOKEN, "--data-dir", dataDir, "--log-level", "info"], dataDir, {
    // Spans wait for the stop (a long schedule); the stop's export times out after 3 s, its notice comes after 1 s.
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_BSP_SCHEDULE_DELAY: "600000", OTEL_EXPORTER_OTLP_TIMEOUT: "3000" },
  });
  try {
    const invoked = await run(["invoke", "echo", "count", "-c", '{"name":"x"}', "1", "0"], { env: server.env });
    expect(itemsOf(invoked.stdout, "$")).toEqual([0]);
    const stopped = await server.stop();
    expect(stopped.code, server.running.stderr()).toBe(EXIT.success);
    const events = server.running
      .stderr()
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => (JSON.parse(line) as { event?: string }).event);
    expect(events.slice(events.indexOf("server.stopping"))).toEqual([
      "server.stopping",
      "tracing.flushing",
      "tracing.export-failed",
      "server.stop",
    ]);
  } finally {
    silent.closeAllConnections();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  }
});

it.each([
  [{ OTEL_TRACES_EXPORTER: "jaeger" }, "OTEL_TRACES_EXPORTER=jaeger: serve exports traces with otlp only (or none)"],
  [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"],
  [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_EXPORTER_OTLP_TIMEOUT: "abc" }, "OTEL_EXPORTER_OTLP_TIMEOUT=abc"],
])("a setting serve cannot honour is a usage error before it listens: %j", async (env, message) => {
  const dataDir = join(scratchDir(), "state");
  const result = await run(["serve", "--port", "0", "--token", TOKEN, "--data-dir", dataDir], { env });
  expect(result.code).toBe(EXIT.usage);
  expect(result.stderr).toContain(message);
  expect(result.stdout.toString()).not.toContain("listening on");
});
