/**
 * The public types need no Node types: a browser application's project
 * (test/browser-project: `lib: ["dom", "es2022"]`, `types: []`, no
 * skipLibCheck) type-checks against the built package, imported by name. A
 * control file that uses Node globals must fail in the same project, so a
 * project that silently loaded Node types could not pass.
 */
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { expect, it } from "vitest";

const project = fileURLToPath(new URL("./browser-project/", import.meta.url));
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");

async function typeCheck(config: string): Promise<{ code: number; output: string }> {
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [tsc, "-p", `${project}${config}`, "--pretty", "false"]);
    return { code: 0, output: stdout };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? 1, output: `${failed.stdout ?? ""}${failed.stderr ?? ""}` };
  }
}

it("a browser project without Node types type-checks against the package", async () => {
  const { code, output } = await typeCheck("tsconfig.json");
  expect(output).toBe("");
  expect(code).toBe(0);
}, 60_000);

it("the same project refuses Node globals (the check is not blind)", async () => {
  const { code, output } = await typeCheck("tsconfig.control.json");
  expect(code).not.toBe(0);
  expect(output).toMatch(/control-uses-node\.ts.*Cannot find name 'process'/);
  expect(output).not.toMatch(/main\.ts/);
}, 60_000);
