/** `parseByteSize`: the value of `serve --max-stored-bytes-per-principal`; bounded, of `--max-catalogue-bytes`. */
import { InvalidArgumentError } from "commander";
import { expect, it } from "vitest";
import { parseBoundedByteSize, parseByteSize } from "../src/option-parsers.js";

it("reads a whole number of bytes with an optional binary unit", () => {
  expect(parseByteSize("1")).toBe(1);
  expect(parseByteSize("1048576")).toBe(1024 * 1024);
  expect(parseByteSize("7B")).toBe(7);
  expect(parseByteSize("2KiB")).toBe(2048);
  expect(parseByteSize("512MiB")).toBe(512 * 2 ** 20);
  expect(parseByteSize("16GiB")).toBe(16 * 2 ** 30);
  expect(parseByteSize("3TiB")).toBe(3 * 2 ** 40);
});

it("refuses zero, decimal units, fractions, signs, spaces and sizes past 2^53 - 1 bytes", () => {
  for (const bad of ["0", "", "16GB", "16K", "1.5GiB", "-1", "+1", " 1", "1 MiB", "01", "gib", "9007199254740992", "8192TiB"]) {
    expect(() => parseByteSize(bad), bad).toThrow(InvalidArgumentError);
  }
});

it("a bounded size takes the same spellings up to its bound, and says the bound when refusing", () => {
  const parse = parseBoundedByteSize(256 * 2 ** 20, "at most 256MiB: 16MiB, 64MiB");
  expect(parse("16MiB")).toBe(16 * 2 ** 20);
  expect(parse("256MiB")).toBe(256 * 2 ** 20);
  expect(parse("1")).toBe(1);
  for (const bad of ["0", "257MiB", "268435457", "1GiB", "16MB", "9007199254740992"]) {
    expect(() => parse(bad), bad).toThrow(
      new InvalidArgumentError("a size is a positive whole number and an optional unit B, KiB, MiB or GiB, at most 256MiB: 16MiB, 64MiB"),
    );
  }
});
