/** How a check states what it saw when it fails: `Mismatch` and the assertions that throw it. */

/** A failed expectation; its message is what the check saw. */
export class Mismatch extends Error {}

export function ensure(condition: boolean, saw: string): asserts condition {
  if (!condition) throw new Mismatch(saw);
}

export function show(value: unknown): string {
  const text = JSON.stringify(value, (_key, v: unknown) => (typeof v === "bigint" ? v.toString() : v));
  return text === undefined ? String(value) : text.length > 400 ? `${text.slice(0, 400)}…` : text;
}

/** JSON text with object members sorted: equality that ignores member order, as receivers must (section 2). */
function normalized(value: unknown): string {
  return (
    JSON.stringify(value, (_key, v: unknown) => {
      if (typeof v === "bigint") return v.toString();
      if (v !== null && typeof v === "object" && !Array.isArray(v) && !ArrayBuffer.isView(v)) {
        return Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
      }
      return v;
    }) ?? String(value)
  );
}

export function ensureEqual(actual: unknown, expected: unknown, what: string): void {
  if (normalized(actual) !== normalized(expected)) throw new Mismatch(`${what}: expected ${show(expected)}, saw ${show(actual)}`);
}
