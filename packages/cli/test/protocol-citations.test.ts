/**
 * Every section the code and the docs cite resolves in the repository: a bare `§9` or `§6.2` (or
 * "protocol 9", "protocol section 9") names a heading of docs/protocol/stream-session-v1.md,
 * `decisions §5` (or `decisions-v1 §5`, "decisions-v1 section 5") one of
 * docs/protocol/decisions-v1.md, and a citation of another page (`client.md §10a`,
 * `§5 of [client.md](client.md)`, `[§5](#…)`) one of that page. A list (`decisions §5, §7`) or a
 * range (`decisions §1-2`) keeps its qualifier. Both restatements keep the originals' numbering,
 * so the test also pins their section structure.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

const REPOSITORY = fileURLToPath(new URL("../../../", import.meta.url));
const PROTOCOL = join(REPOSITORY, "docs", "protocol", "stream-session-v1.md");
const DECISIONS = join(REPOSITORY, "docs", "protocol", "decisions-v1.md");

function filesUnder(dir: string, keep: (name: string) => boolean): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    if (name === "node_modules" || name === "dist" || name.startsWith(".")) return [];
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path, keep) : keep(name) ? [path] : [];
  });
}

const PACKAGES = readdirSync(join(REPOSITORY, "packages")).map((name) => join(REPOSITORY, "packages", name));
/** Where citations are checked: the docs, the READMEs, and every package's sources and tests. */
const CITING = [
  ...filesUnder(join(REPOSITORY, "docs"), (name) => name.endsWith(".md")),
  join(REPOSITORY, "README.md"),
  ...PACKAGES.map((dir) => join(dir, "README.md")).filter(existsSync),
  ...PACKAGES.flatMap((dir) => ["src", "test"].flatMap((sub) => filesUnder(join(dir, sub), (name) => /\.(ts|mts|js|mjs)$/.test(name)))),
].filter((file) => file !== fileURLToPath(import.meta.url)); // this file quotes made-up citations

/** The section numbers of a markdown page: `## 9. Title`, `### 6.2 Title`, `## 10a. Title`. */
function sectionsOf(file: string): Set<string> {
  return new Set([...readFileSync(file, "utf8").matchAll(/^#{2,4} (\d+(?:\.\d+)?[a-z]?)\.? /gm)].map((match) => match[1] as string));
}

/** GitHub's anchor for each heading of a page: lower case, punctuation dropped, spaces to hyphens. */
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

/** A page named in a citation (`client.md`, `docs/protocol/client.md`): looked up under docs/. */
function pageNamed(name: string, citingFile: string): string | undefined {
  const beside = resolve(dirname(citingFile), name);
  if (existsSync(beside)) return beside;
  const fromRoot = resolve(REPOSITORY, name);
  if (existsSync(fromRoot)) return fromRoot;
  const docs = filesUnder(join(REPOSITORY, "docs"), (file) => file === basename(name));
  return docs.length === 1 ? docs[0] : undefined;
}

/** `5`, `6.2`, `10a`, and a range `1-2` / `5–6` spelled out. */
function numbersIn(list: string): string[] {
  return [...list.matchAll(/(\d+(?:\.\d+)?[a-z]?)(?:\s*[-–]\s*§?(\d+)(?![.\d]))?/g)].flatMap((match) => {
    const from = match[1] as string;
    const to = match[2];
    if (to === undefined || !/^\d+$/.test(from)) return [from];
    return Array.from({ length: Math.max(1, Number(to) - Number(from) + 1) }, (_, i) => String(Number(from) + i));
  });
}

interface Citation {
  line: number;
  text: string;
  /** The page whose headings it must name. */
  page: string | undefined;
  numbers: string[];
  /** The heading a link-form citation (`[§5](#5-reconnect-policy)`) goes to. */
  anchor?: string | undefined;
}

const NUMBER = String.raw`\d+(?:\.\d+)?[a-z]?`;
/** `[qualifier ]§N[, §M | and §M | -K]…[ of page]`, the qualifier a document or "decisions". */
const SECTION_SIGN = new RegExp(
  String.raw`(?:(?<qualifier>decisions(?:-v1)?|protocol|RFC\s?\d+|[\w./-]+\.md)\s+)?(?<open>\[)?§\s?(?<list>${NUMBER}(?:(?:\s*(?:,|and|or)\s*§\s?|\s*[-–]\s*§?)${NUMBER})*)(?:\]\((?<href>[^)\s]*)\))?(?:\s+of\s+(?:\[[^\]]*\]\((?<ofLink>[^)#\s]+)[^)]*\)|(?<ofName>[\w./-]+\.md)))?`,
  "gi",
);
/** "protocol 6.4, 6.5, 7, 9", "protocol section 9", "decisions-v1 sections 3, 5 and 6", "protocol sections 2 and 4–7". */
const SECTION_WORD = new RegExp(
  String.raw`\b(?<qualifier>decisions(?:-v1)?|protocol)\s+(?:sections?\s+)?(?<list>\d+(?:\.\d+)?(?:(?:\s*(?:,|and|or)\s*|\s*[-–]\s*)\d+(?:\.\d+)?)*)`,
  "gi",
);

function citationsOf(file: string): Citation[] {
  const lines = readFileSync(file, "utf8").split("\n");
  return lines.flatMap((text, index) => {
    const found: Citation[] = [];
    for (const match of text.matchAll(SECTION_SIGN)) {
      const { qualifier, open, list, href, ofLink, ofName } = match.groups as Record<string, string | undefined>;
      let page: string | undefined;
      // Another standard's sections ("RFC 6455 §8.1") are not ours to check.
      if (qualifier !== undefined && /^RFC/i.test(qualifier)) continue;
      if (ofLink !== undefined || ofName !== undefined) page = pageNamed((ofLink ?? ofName) as string, file);
      else if (open !== undefined && href !== undefined && href.startsWith("#"))
        page = qualifier?.endsWith(".md") ? pageNamed(qualifier, file) : file;
      else if (open !== undefined && href !== undefined) page = pageNamed(href.split("#")[0] as string, file);
      else if (qualifier === undefined || /^protocol$/i.test(qualifier)) page = PROTOCOL;
      else if (/^decisions/i.test(qualifier)) page = DECISIONS;
      else page = pageNamed(qualifier, file);
      const anchor = open !== undefined && href?.includes("#") ? href.split("#")[1] : undefined;
      found.push({ line: index + 1, text: match[0], page, numbers: numbersIn(list as string), anchor });
    }
    for (const match of text.matchAll(SECTION_WORD)) {
      const qualifier = match.groups?.["qualifier"] ?? "";
      const list = match.groups?.["list"] ?? "";
      found.push({ line: index + 1, text: match[0], page: /^decisions/i.test(qualifier) ? DECISIONS : PROTOCOL, numbers: numbersIn(list) });
    }
    return found;
  });
}

it("the restatements are numbered exactly like the protocol and decisions-v1", () => {
  const protocol = [
    ...Array.from({ length: 14 }, (_, i) => String(i + 1)),
    ...["3.1", "3.2", "3.3", "4.1", "4.2", "4.3", "5.1", "5.2", "5.3", "5.4", "5.5"],
    ...Array.from({ length: 9 }, (_, i) => `6.${i + 1}`),
    "10.1",
    "10.2",
  ];
  expect([...sectionsOf(PROTOCOL)].sort()).toEqual(protocol.sort());
  expect([...sectionsOf(DECISIONS)].sort()).toEqual(["1", "2", "3", "4", "5", "6", "7", "8"]);
  // The anchors GitHub gives them are the ones the docs link to.
  expect(anchorsOf(PROTOCOL).has("9-attempts-retry-resume-and-takeover")).toBe(true);
  expect(anchorsOf(PROTOCOL).has("62-invocationrejected")).toBe(true);
  expect(anchorsOf(DECISIONS).has("8-session-semantics-the-protocol-leaves-open")).toBe(true);
});

it("every § cited in the docs, the READMEs, the sources and the tests names a section that exists", () => {
  const citations = CITING.flatMap((file) => citationsOf(file).map((citation) => ({ file, ...citation })));
  // The scan finds the citations it is meant to find (a broken pattern would pass vacuously).
  expect(citations.length).toBeGreaterThan(300);
  expect(citations.some((citation) => citation.page === DECISIONS)).toBe(true);
  expect(citations.some((citation) => citation.page !== PROTOCOL && citation.page !== DECISIONS)).toBe(true);

  const sections = new Map<string, Set<string>>();
  const unresolved = citations.flatMap(({ file, line, text, page, numbers, anchor }) => {
    const where = `${relative(REPOSITORY, file)}:${line}: "${text}"`;
    if (page === undefined) return [`${where} cites a page that does not exist`];
    if (!sections.has(page)) sections.set(page, sectionsOf(page));
    const missing = numbers.filter((number) => !sections.get(page)?.has(number));
    if (anchor !== undefined && !anchorsOf(page).has(anchor)) return [`${where}: no heading #${anchor} in ${relative(REPOSITORY, page)}`];
    return missing.length === 0 ? [] : [`${where}: no section ${missing.join(", ")} in ${relative(REPOSITORY, page)}`];
  });
  expect(unresolved).toEqual([]);
});

it("every link into the restatements names a heading they have", () => {
  const targets = new Map([
    ["stream-session-v1.md", PROTOCOL],
    ["decisions-v1.md", DECISIONS],
  ]);
  const broken = CITING.flatMap((file) =>
    [...readFileSync(file, "utf8").matchAll(/\]\([^)\s]*?(stream-session-v1\.md|decisions-v1\.md)#([^)\s]+)\)/g)].flatMap((match) => {
      const page = targets.get(match[1] as string) as string;
      return anchorsOf(page).has(match[2] as string) ? [] : [`${relative(REPOSITORY, file)}: ${match[1]}#${match[2]}`];
    }),
  );
  const selfLinks = [PROTOCOL, DECISIONS].flatMap((file) =>
    [...readFileSync(file, "utf8").matchAll(/\]\(#([^)\s]+)\)/g)]
      .filter((match) => !anchorsOf(file).has(match[1] as string))
      .map((match) => `${relative(REPOSITORY, file)}: #${match[1]}`),
  );
  expect([...broken, ...selfLinks]).toEqual([]);
});
