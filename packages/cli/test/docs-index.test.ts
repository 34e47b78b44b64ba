/**
 * docs/README.md is the way into the documentation: every page under docs/ is reachable from it
 * (directly, or through the protocol decisions' own index), every relative link in the two
 * indexes resolves (file, and heading when it names one), and release-process notes stay out of
 * the user documentation.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

const REPOSITORY = fileURLToPath(new URL("../../../", import.meta.url));
const DOCS = join(REPOSITORY, "docs");
const INDEXES = [join(DOCS, "README.md"), join(DOCS, "protocol", "README.md")];

function markdownUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? markdownUnder(path) : name.endsWith(".md") ? [path] : [];
  });
}

/** Relative link targets of a markdown file: [file path, heading anchor or undefined]. */
function links(file: string): { target: string; anchor: string | undefined }[] {
  return [...readFileSync(file, "utf8").matchAll(/\]\(([^)\s]+)\)/g)]
    .map((match) => match[1] as string)
    .filter((href) => !/^[a-z]+:/.test(href) && !href.startsWith("#"))
    .map((href) => {
      const [path, anchor] = href.split("#") as [string, string | undefined];
      return { target: resolve(dirname(file), path), anchor };
    });
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function anchorsOf(file: string): Set<string> {
  const headings = [...readFileSync(file, "utf8").matchAll(/^#{1,6} (.*)$/gm)].map((match) => match[1] as string);
  return new Set(
    headings.map((heading) =>
      heading
        .toLowerCase()
        .replace(/[^\p{L}\p{N} _-]/gu, "")
        .replace(/ /g, "-"),
    ),
  );
}

it("every page under docs/ is reachable from docs/README.md", () => {
  const linked = new Set(INDEXES.flatMap(links).map((link) => link.target));
  const unlinked = markdownUnder(DOCS).filter((file) => !INDEXES.includes(file) && !linked.has(file));
  expect(unlinked.map((file) => relative(REPOSITORY, file))).toEqual([]);
  expect(linked.has(join(DOCS, "protocol", "README.md"))).toBe(true);
});

it("every relative link of the indexes resolves, to the heading it names", () => {
  const broken = INDEXES.flatMap((index) =>
    links(index)
      .filter(({ target, anchor }) => !existsSync(target) || (anchor !== undefined && !anchorsOf(target).has(anchor)))
      .map(
        ({ target, anchor }) =>
          `${relative(REPOSITORY, index)} → ${relative(REPOSITORY, target)}${anchor === undefined ? "" : `#${anchor}`}`,
      ),
  );
  expect(broken).toEqual([]);
});

it("release-process notes are not user documentation", () => {
  const releaseNotes = markdownUnder(DOCS).filter((file) => /How it was folded|How to fold/.test(readFileSync(file, "utf8")));
  expect(releaseNotes.map((file) => relative(REPOSITORY, file))).toEqual([]);
  expect(existsSync(join(REPOSITORY, "release", "0.1.0-notes.md"))).toBe(true);
});
