/** Reading a server's Prometheus `/metrics` (`serve --metrics`) in tests. */

/** The value of one sample (`name` with its labels, as Prometheus prints it), 0 when absent. */
export function sampleOf(text: string, name: string): number {
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.slice(name.length + 1));
}

/** Scrapes `/metrics` until `predicate` holds (bounded by tries, never a fixed wait). */
export async function scrapeUntil(url: string, predicate: (text: string) => boolean, what: string): Promise<string> {
  for (let tries = 0; tries < 1000; tries++) {
    const text = await (await fetch(`${url}/metrics`)).text();
    if (predicate(text)) return text;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`gave up scraping until ${what}`);
}

/** The bytes of `u8` input the server accepted. */
export const U8_BYTES = 'golem_stream_input_bytes_total{kind="u8"}';
