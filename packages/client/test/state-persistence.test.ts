/**
 * StatePersistence.commit: a stream that retained a cursor waits for the
 * save only when there is a callback to save it; without one there is
 * nothing to wait for, and it gets no promise (one promise chain per
 * delivered item was measurable on small items).
 */
import { describe, expect, it } from "vitest";
import { ClientError } from "../src/errors.js";
import { StatePersistence } from "../src/state-persistence.js";
import type { ResumeState } from "../src/checkpoint.js";

const state = { sessionToken: "s" } as unknown as ResumeState;

describe("StatePersistence.commit", () => {
  it("gives nothing to wait for without a callback", () => {
    const persistence = new StatePersistence(
      undefined,
      () => state,
      () => undefined,
    );
    expect(persistence.commit()).toBeUndefined();
  });

  it("resolves after the callback saved the state", async () => {
    const saved: ResumeState[] = [];
    let release!: () => void;
    const persistence = new StatePersistence(
      (s) => new Promise<void>((resolve) => (release = () => (saved.push(s), resolve()))),
      () => state,
      () => undefined,
    );
    let done = false;
    const committing = persistence.commit();
    expect(committing).toBeInstanceOf(Promise);
    void committing!.then(() => (done = true));
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(done).toBe(false);
    release();
    await committing;
    expect(saved).toEqual([state]);
  });

  it("rejects with checkpoint-failed when the callback fails, and reports it once", async () => {
    const failures: ClientError[] = [];
    const persistence = new StatePersistence(
      () => Promise.reject(new Error("disk full")),
      () => state,
      (error) => failures.push(error),
    );
    await expect(persistence.commit()).rejects.toMatchObject({ kind: "checkpoint-failed" });
    await expect(persistence.commit()).rejects.toMatchObject({ kind: "checkpoint-failed" });
    expect(failures).toHaveLength(1);
  });
});
