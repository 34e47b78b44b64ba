/**
 * A list of names for a one-line summary (serve's banner, codegen's report): every name up to
 * `max`, then how many more there are. A catalogue of fifty agent types would otherwise make a
 * line of hundreds of characters that the terminal wraps into the next; the full list is one
 * command away (`types`, or the file written).
 */

/** The names most summaries show before counting the rest. */
export const BRIEF_LIST_MAX = 8;

/** `a, b, c`; or `a, b, …, h and 42 more` when there are more than `max` + 1 (never "and 1 more": the name takes no more room). */
export function briefList(names: readonly string[], max = BRIEF_LIST_MAX): string {
  if (names.length <= max + 1) return names.join(", ");
  return `${names.slice(0, max).join(", ")} and ${names.length - max} more`;
}
