import { ProtocolError } from "@golem-stream/wire";
import { expect } from "vitest";

/** Runs `run`, asserts it threw a ProtocolError, and returns it. */
export function thrown(run: () => unknown): ProtocolError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ProtocolError);
    return error as ProtocolError;
  }
  throw new Error("expected a ProtocolError, nothing was thrown");
}
