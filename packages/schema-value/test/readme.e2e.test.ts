/**
 * The README's first example is what a user copies first, so it must run as
 * it stands: this test extracts it, runs it with node in a real process
 * against the built package (importing it by name, as a user would), and
 * checks that every `// prints: X` comment appears as a line of its output.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

const packageDir = fileURLToPath(new URL("..", import.meta.url));

it("the README's first example runs and prints what its comments say", () => {
  const readme = readFileSync(`${packageDir}README.md`, "utf8");
  const example = /```js\n([\s\S]*?)```/.exec(readme)?.[1];
  expect(example).toBeDefined();
  const expected = [...(example ?? "").matchAll(/\/\/ prints: (.*?)(?: \(.*\))?$/gm)].map((match) => match[1] as string);
  expect(expected.length).toBeGreaterThan(0);
  // node resolves "@golem-stream/schema-value" from the package directory to the package itself (its dist/).
  const output = execFileSync(process.execPath, ["--input-type=module", "-e", example ?? ""], { cwd: packageDir, encoding: "utf8" });
  const lines = output.split("\n");
  for (const line of expected) expect(lines, `"${line}" in:\n${output}`).toContain(line);
});
