/**
 * JSONTestSuite (github.com/nst/JSONTestSuite, test_parsing): `n_` must be
 * rejected, `y_` accepted (except documents with duplicate member names,
 * which section 2 rejects), and every `i_` file has a recorded decision.
 * The suite lives in ../shared, which a fresh clone does not have.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ProtocolError, parseStrictJson } from "../src/index.js";

const suiteDir = fileURLToPath(new URL("../../../../shared/conformance/JSONTestSuite/test_parsing/", import.meta.url));
const present = existsSync(suiteDir);
if (!present) {
  console.log(`JSONTestSuite skipped: ${suiteDir} is absent (it ships in ../shared, not in the repository)`);
}

/** `y_` documents that section 2 rejects: they repeat a member name. */
const DUPLICATE_NAMES = new Set(["y_object_duplicated_key.json", "y_object_duplicated_key_and_value.json"]);

/**
 * Decisions for implementation-defined inputs. `true` accepts. Numbers that
 * overflow a double are rejected (no codec here can carry them); underflow
 * to zero is a valid double. Text must be well-formed UTF-8 and escapes must
 * not produce lone surrogates; BOMs and UTF-16 are not JSON text here.
 * 500 nested arrays exceed the depth limit of 128.
 */
const I_DECISIONS: Record<string, boolean> = {
  "i_number_double_huge_neg_exp.json": true,
  "i_number_huge_exp.json": false,
  "i_number_neg_int_huge_exp.json": false,
  "i_number_pos_double_huge_exp.json": false,
  "i_number_real_neg_overflow.json": false,
  "i_number_real_pos_overflow.json": false,
  "i_number_real_underflow.json": true,
  "i_number_too_big_neg_int.json": true,
  "i_number_too_big_pos_int.json": true,
  "i_number_very_big_negative_int.json": true,
  "i_object_key_lone_2nd_surrogate.json": false,
  "i_string_1st_surrogate_but_2nd_missing.json": false,
  "i_string_1st_valid_surrogate_2nd_invalid.json": false,
  "i_string_UTF-16LE_with_BOM.json": false,
  "i_string_UTF-8_invalid_sequence.json": false,
  "i_string_UTF8_surrogate_U+D800.json": false,
  "i_string_incomplete_surrogate_and_escape_valid.json": false,
  "i_string_incomplete_surrogate_pair.json": false,
  "i_string_incomplete_surrogates_escape_valid.json": false,
  "i_string_invalid_lonely_surrogate.json": false,
  "i_string_invalid_surrogate.json": false,
  "i_string_invalid_utf-8.json": false,
  "i_string_inverted_surrogates_U+1D11E.json": false,
  "i_string_iso_latin_1.json": false,
  "i_string_lone_second_surrogate.json": false,
  "i_string_lone_utf8_continuation_byte.json": false,
  "i_string_not_in_unicode_range.json": false,
  "i_string_overlong_sequence_2_bytes.json": false,
  "i_string_overlong_sequence_6_bytes.json": false,
  "i_string_overlong_sequence_6_bytes_null.json": false,
  "i_string_truncated-utf-8.json": false,
  "i_string_utf16BE_no_BOM.json": false,
  "i_string_utf16LE_no_BOM.json": false,
  "i_structure_500_nested_arrays.json": false,
  "i_structure_UTF-8_BOM_empty_object.json": false,
};

function accepts(bytes: Uint8Array): boolean {
  try {
    parseStrictJson(bytes);
    return true;
  } catch (error) {
    expect(error).toBeInstanceOf(ProtocolError);
    return false;
  }
}

describe.skipIf(!present)("JSONTestSuite test_parsing", () => {
  const files = present
    ? readdirSync(suiteDir)
        .filter((name) => name.endsWith(".json"))
        .sort()
    : [];
  const read = (name: string) => new Uint8Array(readFileSync(suiteDir + name));

  it("has the expected corpus", () => {
    expect(files.filter((f) => f.startsWith("y_")).length).toBeGreaterThan(90);
    expect(files.filter((f) => f.startsWith("n_")).length).toBeGreaterThan(180);
  });

  it.each(files.filter((f) => f.startsWith("n_")))("rejects %s", (name) => {
    expect(accepts(read(name))).toBe(false);
  });

  it.each(files.filter((f) => f.startsWith("y_")))("decides %s", (name) => {
    expect(accepts(read(name))).toBe(!DUPLICATE_NAMES.has(name));
  });

  it.each(files.filter((f) => f.startsWith("i_")))("records a decision for %s", (name) => {
    expect(I_DECISIONS).toHaveProperty([name]);
    expect(accepts(read(name))).toBe(I_DECISIONS[name]);
  });
});
