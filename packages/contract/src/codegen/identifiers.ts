/**
 * Names in generated source. Everything a server names (agent types,
 * methods, fields, def ids) is arbitrary Unicode, so it reaches the source
 * either as a string literal or through these rules:
 *
 * - an exported identifier is built from the ASCII letters and digits of the
 *   name, split into words at every other character and joined in camelCase,
 *   plus a suffix (`Contract`, `Def`) — so it can never be a reserved word;
 *   a name without ASCII letters or digits becomes `agent…`/`def…`, a leading
 *   digit gets the same prefix;
 * - two names that come out the same are told apart by `_2`, `_3`, … in
 *   catalogue order (`NameAllocator`), so the output is stable for a given
 *   catalogue;
 * - object keys (method and field names) stay the server's exact names:
 *   bare when they are identifiers, quoted otherwise, `__proto__` computed
 *   (a literal `__proto__:` would set the prototype instead of a member).
 */

/** Words of ASCII letters and digits, in order. */
export function wordsOf(name: string): string[] {
  return name.split(/[^A-Za-z0-9]+/).filter((word) => word.length > 0);
}

/** camelCase of `words`; `fallback` when there are none, and as a prefix before a leading digit. */
export function camelCase(words: readonly string[], fallback: string): string {
  const joined = words.map((word, i) => (i === 0 ? word.charAt(0).toLowerCase() : word.charAt(0).toUpperCase()) + word.slice(1)).join("");
  if (joined === "") return fallback;
  return /^[0-9]/.test(joined) ? fallback + joined : joined;
}

/** Reserved words and globals a module-level `const` must not take (defence in depth: every name has a suffix). */
const RESERVED: ReadonlySet<string> = new Set(
  (
    "break case catch class const continue debugger default delete do else enum export extends false finally for function if import in " +
    "instanceof new null return super switch this throw true try typeof var void while with as implements interface let package private " +
    "protected public static yield await async of undefined NaN Infinity arguments eval Object Array String Number Symbol Promise Map Set"
  ).split(" "),
);

/** Hands out distinct identifiers; the first name to ask for a spelling gets it. */
export class NameAllocator {
  private readonly taken = new Set<string>();

  constructor(reserved: Iterable<string> = []) {
    for (const name of [...RESERVED, ...reserved]) this.taken.add(name);
  }

  allocate(wanted: string): string {
    let name = wanted;
    for (let n = 2; this.taken.has(name); n++) name = `${wanted}_${n}`;
    this.taken.add(name);
    return name;
  }
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** An object-literal key that creates an own member named exactly `name`. */
export function propertyKey(name: string): string {
  if (name === "__proto__") return `[${JSON.stringify(name)}]`;
  return IDENTIFIER.test(name) ? name : JSON.stringify(name);
}

/** True for names JavaScript orders before all others in an object (integer-like keys). */
export function isIntegerLike(name: string): boolean {
  return /^(0|[1-9][0-9]*)$/.test(name);
}
