/**
 * How long the catalogue's text is, counted before anything writes it. Discovery serves the
 * catalogue spelled out as JSON and the fingerprint hashes it so, but a graph built in memory may
 * use one type object at many places, which the schema decoder reads once and the text repeats
 * at each: twenty levels of `t.tuple(x, x)` are a million copies, thirty a billion, and twelve
 * methods of a million each are the same as one of twelve million. Written out at start and at
 * every discovery request, such a catalogue ran the process out of memory.
 *
 * The count is in units of about a byte of text: one per object, array, number, boolean and null,
 * one per character of a string or a member's name. The bound is for the whole catalogue:
 * `MAX_CATALOGUE_TEXT_UNITS` (32 Mi), about 32 to 100 MiB of text, against the 9.3 MiB of 40 000
 * agent types of one small method each; a client reads 8 MiB of it by default and 256 MiB at
 * most (`maxCatalogueBytes`, `--max-catalogue-bytes`).
 */
import { CatalogueError } from "./catalogue-error.js";

export const MAX_CATALOGUE_TEXT_UNITS = 32 * 1024 * 1024;

export class SpelledOutCatalogue {
  /** Each object's units, once counted: a shared object is visited once, however often it is used. */
  readonly #units = new Map<object, number>();
  #total = 0;

  /** Adds `graph`'s text to the catalogue's; past the bound, names `where`. */
  add(graph: unknown, where: string): void {
    this.#total += this.#count(graph, MAX_CATALOGUE_TEXT_UNITS - this.#total);
    if (this.#total > MAX_CATALOGUE_TEXT_UNITS) {
      throw new CatalogueError(
        `${where} takes the catalogue past ${MAX_CATALOGUE_TEXT_UNITS} units of JSON text (about a byte each): a type used at many places is written out at each of them in the catalogue clients read; define it once in t.graph's defs and use refs to it`,
      );
    }
  }

  /** `value`'s units, counted up to `room` + 1 (past it the exact figure does not matter). */
  #count(value: unknown, room: number): number {
    if (typeof value === "string") return value.length;
    if (typeof value !== "object" || value === null) return 1;
    const known = this.#units.get(value);
    if (known !== undefined) return known;
    let total = 1;
    if (Array.isArray(value)) {
      for (const item of value as unknown[]) {
        if (total > room) break;
        total += this.#count(item, room - total);
      }
    } else {
      for (const [name, member] of Object.entries(value)) {
        if (total > room) break;
        total += name.length + this.#count(member, room - total - name.length);
      }
    }
    // A count cut short is not the object's: kept, it would be too small where there is more room.
    if (total <= room) this.#units.set(value, total);
    return total;
  }
}
