/** Each vector file matches its JSON Schema, and the schemas are strict enough to refuse a damaged file. */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { describe, expect, it } from "vitest";
import { loadVectors, VECTOR_FILES, type VectorFile } from "../src/index.js";

// ajv-formats is CommonJS: its default export arrives as the module object under some loaders.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (
  ajv: Ajv2020,
) => void;

function validator(file: VectorFile) {
  const schema = JSON.parse(
    readFileSync(fileURLToPath(new URL(`../schemas/${file.replace(".json", ".schema.json")}`, import.meta.url)), "utf8"),
  ) as object;
  const ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false });
  addFormats(ajv);
  return ajv.compile(schema);
}

describe("vector schemas", () => {
  for (const file of VECTOR_FILES) {
    it(`${file} matches schemas/${file.replace(".json", ".schema.json")}`, () => {
      const validate = validator(file);
      const ok = validate(loadVectors(file));
      expect(ok ? [] : validate.errors?.slice(0, 5)).toEqual([]);
    });

    it(`${file}: a case with an unknown member, or the description removed, is refused`, () => {
      const validate = validator(file);
      const data = loadVectors<Record<string, unknown>>(file);
      const listKey = "cases" in data ? "cases" : "valid";
      const withExtra = { ...data, [listKey]: [{ ...(data[listKey] as object[])[0], surprise: true }] };
      expect(validate(withExtra)).toBe(false);
      const { description: _gone, ...withoutDescription } = data;
      expect(validate(withoutDescription)).toBe(false);
    });
  }
});
