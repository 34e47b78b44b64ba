/**
 * What an operator sees of a store outage: the Prometheus metrics (unavailable gauge, retries,
 * outage lengths, writes failed past the grace) and the log lines, from the events a store reports.
 */
import { describe, expect, it } from "vitest";
import { PrometheusMetrics } from "../src/observability/prometheus-metrics.js";
import { logObserver } from "../src/observability/log-observer.js";
import type { StoreOutageEvent } from "../src/store/outage-grace.js";

const OUTAGE: StoreOutageEvent[] = [
  { kind: "unavailable", error: "connect ECONNREFUSED" },
  { kind: "retry", error: "connect ECONNREFUSED", delayMs: 100 },
  { kind: "retry", error: "connect ECONNREFUSED", delayMs: 200 },
  { kind: "grace-exceeded", seconds: 30, writes: 7, error: "connect ECONNREFUSED" },
];

describe("a store outage, observed", () => {
  it("moves the metrics: unavailable while it lasts, retries, writes failed past the grace, its length once over", async () => {
    const metrics = new PrometheusMetrics();
    /** A gauge's or a counter's one value. */
    const value = async (name: string): Promise<number | undefined> =>
      (await metrics.registry.getSingleMetric(`golem_stream_${name}`)?.get())?.values[0]?.value;
    expect(await value("store_unavailable")).toBe(0);
    for (const event of OUTAGE) metrics.observer.storeOutage?.(event);
    expect(await value("store_unavailable")).toBe(1);
    expect(await value("store_retries_total")).toBe(2);
    expect(await value("store_outage_failures_total")).toBe(7);
    metrics.observer.storeOutage?.({ kind: "available", seconds: 42 });
    expect(await value("store_unavailable")).toBe(0);
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/^golem_stream_store_outage_seconds_count 1$/m);
    expect(text).toMatch(/^golem_stream_store_outage_seconds_sum 42$/m);
  });

  it("logs the start and the end at warn, writes failed past the grace at error, retries at debug", () => {
    const lines: [string, string, Record<string, unknown> | undefined][] = [];
    const at = (level: string) => (message: string, fields?: Record<string, unknown>) => void lines.push([level, message, fields]);
    const observer = logObserver({ info: at("info"), warn: at("warn"), error: at("error"), debug: at("debug") });
    for (const event of [...OUTAGE, { kind: "available", seconds: 42 } as const]) observer.storeOutage?.(event);
    expect(lines.map(([level, , fields]) => [level, fields?.["event"]])).toEqual([
      ["warn", "store.unavailable"],
      ["debug", "store.retry"],
      ["debug", "store.retry"],
      ["error", "store.outage-grace-exceeded"],
      ["warn", "store.available"],
    ]);
    expect(lines[3]![2]).toMatchObject({ writes: 7, seconds: 30, error: "connect ECONNREFUSED" });
  });
});
