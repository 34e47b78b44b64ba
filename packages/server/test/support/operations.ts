/** Reading the operations endpoints in tests: one metric sample out of Prometheus text, and plain GETs. */

export interface HttpAnswer {
  readonly status: number;
  readonly body: string;
  readonly contentType: string | null;
}

export async function get(httpUrl: string, path: string): Promise<HttpAnswer> {
  const response = await fetch(`${httpUrl}${path}`);
  return { status: response.status, body: await response.text(), contentType: response.headers.get("content-type") };
}

/**
 * The value of one sample in Prometheus text format: `name` with exactly
 * `labels` (order-insensitive). 0 when the sample is absent (a labelled
 * counter appears only once it moved).
 */
export function sample(text: string, name: string, labels: Readonly<Record<string, string>> = {}): number {
  const wanted = Object.entries(labels)
    .map(([key, value]) => `${key}="${value}"`)
    .sort()
    .join(",");
  for (const line of text.split("\n")) {
    if (line.startsWith("#") || line === "") continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (match === null || match[1] !== name) continue;
    const found = (match[2] ?? "")
      .split(/,(?=[a-zA-Z_]+=")/)
      .filter((part) => part !== "")
      .sort()
      .join(",");
    if (found === wanted) return Number(match[3]);
  }
  return 0;
}

/** Scrapes `/metrics` until `predicate` holds for the text (counters move after commits, not at once); returns the text. */
export async function scrapeUntil(httpUrl: string, predicate: (text: string) => boolean, what: string): Promise<string> {
  let text = "";
  for (let attempt = 0; attempt < 2000; attempt++) {
    const answer = await get(httpUrl, "/metrics");
    if (answer.status !== 200) throw new Error(`/metrics answered ${answer.status}`);
    text = answer.body;
    if (predicate(text)) return text;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`metrics never showed ${what}:\n${text}`);
}
