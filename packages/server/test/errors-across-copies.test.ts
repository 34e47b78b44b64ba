/**
 * The errors that cross between the server and agent code, across copies of
 * the package: a `serve --agents` module imports `@golem-stream/server` from
 * its own project, which may be another copy than the server's. Here the
 * sources evaluated a second time, after vitest forgot the first evaluation,
 * are the other copy: two module instances, two copies of each class.
 */
import { expect, it, vi } from "vitest";
import { InputCancelledError, PublicProducerError } from "../src/index.js";

/** The package's entry evaluated anew, with every module it imports: another copy of each class. */
async function anotherCopy(): Promise<typeof import("../src/index.js")> {
  vi.resetModules();
  return await import("../src/index.js");
}

it("PublicProducerError: instanceof recognises the error of another copy, and nothing else", async () => {
  const { PublicProducerError: OtherCopy } = await anotherCopy();
  expect(OtherCopy).not.toBe(PublicProducerError);
  expect(new OtherCopy("shown to the client")).toBeInstanceOf(PublicProducerError);
  expect(new PublicProducerError("shown")).toBeInstanceOf(OtherCopy);
  class Narrower extends PublicProducerError {}
  expect(new Narrower("sub")).toBeInstanceOf(PublicProducerError);
  expect(new Error("plain")).not.toBeInstanceOf(PublicProducerError);
  expect(Object.assign(new Error("look-alike"), { name: "PublicProducerError" })).not.toBeInstanceOf(PublicProducerError);
  expect(null).not.toBeInstanceOf(PublicProducerError);
});

it("InputCancelledError: instanceof recognises the error of another copy, and nothing else", async () => {
  const { InputCancelledError: OtherCopy } = await anotherCopy();
  expect(OtherCopy).not.toBe(InputCancelledError);
  const error = new InputCancelledError("cancelled");
  expect(error).toBeInstanceOf(OtherCopy);
  expect(new OtherCopy("cancelled")).toBeInstanceOf(InputCancelledError);
  expect(error.reason).toBe("cancelled");
  expect(new PublicProducerError("other")).not.toBeInstanceOf(InputCancelledError);
  expect(Object.assign(new Error("input stream cancelled: x"), { name: "InputCancelledError" })).not.toBeInstanceOf(OtherCopy);
});
