import { readdirSync, readFileSync, writeFileSync, chmodSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ProtocolError } from "@golem-stream/wire";
import { removeStaleTemporaries, replaceFileAtomically } from "../src/checkpoint/atomic-file.js";
import { readCheckpointFile, writeCheckpointFile } from "../src/checkpoint/checkpoint-file.js";
import { decodeCheckpoint } from "../src/checkpoint/checkpoint.js";
import { scratchDir } from "./support/processes.js";

const vectors = JSON.parse(readFileSync(new URL("./fixtures/checkpoint-v1.json", import.meta.url), "utf8")) as {
  valid: { checkpoint: unknown }[];
};
const sample = decodeCheckpoint(JSON.stringify(vectors.valid[2]!.checkpoint));

const scratch = scratchDir;

describe("replaceFileAtomically", () => {
  it("replaces the contents and leaves no temporary file behind", async () => {
    const dir = scratch();
    const path = join(dir, "state.json");
    writeFileSync(path, "old");
    await replaceFileAtomically(path, "new");
    expect(readFileSync(path, "utf8")).toBe("new");
    expect(readdirSync(dir)).toEqual(["state.json"]);
  });

  it("keeps the previous contents when the replacement cannot be written", async () => {
    const dir = scratch();
    const path = join(dir, "state.json");
    writeFileSync(path, "old");
    chmodSync(dir, 0o500);
    try {
      // root ignores directory permissions; then the write succeeds and there is nothing to check.
      const failed = await replaceFileAtomically(path, "new").then(
        () => false,
        () => true,
      );
      expect(readFileSync(path, "utf8")).toBe(failed ? "old" : "new");
    } finally {
      chmodSync(dir, 0o700);
    }
    expect(readdirSync(dir)).toEqual(["state.json"]);
  });

  it("fails when the directory does not exist, creating nothing", async () => {
    const dir = scratch();
    await expect(replaceFileAtomically(join(dir, "missing", "state.json"), "x")).rejects.toThrow();
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe("removeStaleTemporaries", () => {
  it("removes what a killed writer of this file left, and nothing else", async () => {
    const dir = scratch();
    const path = join(dir, "run.ckpt");
    const keep = ["run.ckpt", "other.ckpt", ".other.ckpt.123.0123abcd.tmp", ".run.ckpt.notes", "run.ckpt.123.0123abcd.tmp"];
    for (const name of [...keep, ".run.ckpt.123.0123abcd.tmp", ".run.ckpt.9.ffffffff.tmp"]) writeFileSync(join(dir, name), "x");
    await removeStaleTemporaries(path);
    expect(readdirSync(dir).sort()).toEqual([...keep].sort());
  });
});

describe("checkpoint files", () => {
  it("round-trips through the file system", async () => {
    const path = join(scratch(), "run.ckpt");
    await writeCheckpointFile(path, sample);
    expect(await readCheckpointFile(path)).toEqual(sample);
    expect(readFileSync(path, "utf8").endsWith("}\n")).toBe(true);
  });

  it("reports a truncated file as invalid-message", async () => {
    const path = join(scratch(), "run.ckpt");
    await writeCheckpointFile(path, sample);
    const text = readFileSync(path, "utf8");
    writeFileSync(path, text.slice(0, text.length / 2));
    const error = await readCheckpointFile(path).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProtocolError);
    expect((error as ProtocolError).code).toBe("invalid-message");
  });

  it("rejects a missing file with the file system error", async () => {
    const error = await readCheckpointFile(join(scratch(), "none.ckpt")).catch((e: unknown) => e);
    expect((error as { code?: string }).code).toBe("ENOENT");
  });
});
