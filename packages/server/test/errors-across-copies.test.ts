/**
 * The errors that cross between the server and agent code, across copies of
 * the package: a `serve --agents` module imports `@golem-stream/server` from
 * its own project, which may be another copy than the server's. Here the
 * built package (dist/) and the sources are two module instances, two copies
 * of each class.
 */
import { expect, it } from "vitest";
import { InputCancelledError, PublicProducerError } from "../src/index.js";

// A path the compiler does not resolve: lint runs before this package's own build.
const DIST = "../dist/index.js";

it("PublicProducerError: instanceof recognises the error of another copy, and nothing else", async () => {
  const { PublicProducerError: FromDist } = (await import(DIST)) as typeof import("../src/index.js");
  expect(FromDist).not.toBe(PublicProducerError);
  expect(new FromDist("shown to the client")).toBeInstanceOf(PublicProducerError);
  expect(new PublicProducerError("shown")).toBeInstanceOf(FromDist);
  class Narrower extends PublicProducerError {}
  expect(new Narrower("sub")).toBeInstanceOf(PublicProducerError);
  expect(new Error("plain")).not.toBeInstanceOf(PublicProducerError);
  expect(Object.assign(new Error("look-alike"), { name: "PublicProducerError" })).not.toBeInstanceOf(PublicProducerError);
  expect(null).not.toBeInstanceOf(PublicProducerError);
});

it("InputCancelledError: instanceof recognises the error of another copy, and nothing else", async () => {
  const { InputCancelledError: FromDist } = (await import(DIST)) as typeof import("../src/index.js");
  expect(FromDist).not.toBe(InputCancelledError);
  const error = new InputCancelledError("cancelled");
  expect(error).toBeInstanceOf(FromDist);
  expect(new FromDist("cancelled")).toBeInstanceOf(InputCancelledError);
  expect(error.reason).toBe("cancelled");
  expect(new PublicProducerError("other")).not.toBeInstanceOf(InputCancelledError);
  expect(Object.assign(new Error("input stream cancelled: x"), { name: "InputCancelledError" })).not.toBeInstanceOf(FromDist);
});
