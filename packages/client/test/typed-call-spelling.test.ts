/**
 * One documented spelling for a typed call: `client.connect(contract, {...})`. Every README and
 * doc of the repository may mention `typedAgent(...)` only where it says that is an alias, and
 * no code block uses it, so examples copied between documents agree.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

const REPOSITORY = fileURLToPath(new URL("../../../", import.meta.url));
const SKIP = new Set(["node_modules", ".git", "dist", ".turbo", ".changeset"]);

function markdownFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    if (SKIP.has(name) || name.startsWith(".readme-")) return [];
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return markdownFiles(path);
    // A changelog records what a release said then; it is not documentation to copy from.
    return name.endsWith(".md") && name !== "CHANGELOG.md" ? [path] : [];
  });
}

/** Paragraphs (blank-line separated) outside code blocks, and the code blocks, of a markdown text. */
function parts(markdown: string): { prose: string[]; code: string[] } {
  const prose: string[] = [];
  const code: string[] = [];
  markdown.split(/^```.*$/m).forEach((piece, index) => {
    if (index % 2 === 1) code.push(piece);
    else prose.push(...piece.split(/\n\s*\n/));
  });
  return { prose, code };
}

it("docs call typed agents with client.connect; typedAgent( appears only where it is called an alias", () => {
  const files = markdownFiles(REPOSITORY);
  expect(files.length).toBeGreaterThan(10);
  const offenders: string[] = [];
  for (const file of files) {
    const { prose, code } = parts(readFileSync(file, "utf8"));
    for (const block of code)
      if (block.includes("typedAgent(")) offenders.push(`${relative(REPOSITORY, file)}: a code block uses typedAgent(`);
    for (const paragraph of prose) {
      if (paragraph.includes("typedAgent(") && !/\balias\b/.test(paragraph))
        offenders.push(`${relative(REPOSITORY, file)}: ${paragraph.trim().slice(0, 80)}`);
    }
  }
  expect(offenders).toEqual([]);
});
