/**
 * `serve` loads the server packages on demand (they are optional peer
 * dependencies of the CLI). A missing one is a usage error that names the
 * package to install, not a stack trace; the real install without them is
 * checked by the workspace's pack check (packages/pack-check).
 */
import { describe, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { loadOptional, loadServer } from "../src/optional-packages.js";

describe("loadOptional", () => {
  it("turns a missing package into a usage error that says what to install", async () => {
    const missing = "@golem-stream/not-a-package";
    const error = await loadOptional(missing, "golem-stream serve", () => import(missing)).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ exitCode: EXIT.usage });
    expect((error as Error).message).toContain(`golem-stream serve needs ${missing}, which is not installed`);
    expect((error as Error).message).toContain(`npm install -g ${missing}`);
  });

  it("names the missing dependency of a package that is present", async () => {
    const load = () =>
      Promise.reject(
        Object.assign(new Error("Cannot find package 'better-sqlite3' imported from /x/server/dist/index.js"), {
          code: "ERR_MODULE_NOT_FOUND",
        }),
      );
    await expect(loadOptional("@golem-stream/server", "golem-stream serve", load)).rejects.toThrow(
      /needs better-sqlite3, which is not installed/,
    );
  });

  it("reports any other failure to load as it is", async () => {
    await expect(loadOptional("@golem-stream/server", "golem-stream serve", () => Promise.reject(new Error("bad ELF")))).rejects.toThrow(
      "cannot load @golem-stream/server: bad ELF",
    );
  });

  it("loads the server when it is installed", async () => {
    expect(typeof (await loadServer()).startEmbeddedServer).toBe("function");
  });
});
