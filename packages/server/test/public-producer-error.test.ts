/**
 * `PublicProducerError` across copies of the package: a `serve --agents`
 * module imports `@golem-stream/server` from its own project, so the error
 * its method throws may come from another copy than the server's. Here the
 * built package (dist/) and the sources are two module instances, two
 * copies of the class.
 */
import { expect, it } from "vitest";
import { PublicProducerError } from "../src/index.js";

// A path the compiler does not resolve: lint runs before this package's own build.
const DIST = "../dist/index.js";

it("instanceof recognises the error of another copy, and nothing else", async () => {
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
