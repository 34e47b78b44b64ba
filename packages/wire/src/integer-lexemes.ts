/**
 * The members protocol messages require to be JSON integers: `version`,
 * `channel`, and the `channel` of each entry of `mappings`. `JSON.parse`
 * reads `1.0` and `1e0` as the same number as `1`; strict decoding does not
 * (a fraction or exponent is not an integer lexeme, and decoders in other
 * languages reject it), so the parser reports where such lexemes sit and
 * this check rejects them at those members. Elsewhere, inside SchemaValues
 * and configuration values, they are ordinary numbers.
 */
import { invalidAt } from "./codec.js";
import type { JsonPath } from "./strict-json.js";

/** Container depth the parser must track for this check (`mappings[i].channel`). */
export const INTEGER_MEMBER_DEPTH = 3;

export function rejectNonIntegerLexemes(paths: readonly JsonPath[]): void {
  for (const path of paths) {
    const [first, second, third] = path;
    if (path.length === 1 && (first === "version" || first === "channel")) {
      throw invalidAt(first, "must be written as a JSON integer, without fraction or exponent");
    }
    if (path.length === 3 && first === "mappings" && typeof second === "number" && third === "channel") {
      throw invalidAt(`mappings[${second}].channel`, "must be written as a JSON integer, without fraction or exponent");
    }
  }
}
