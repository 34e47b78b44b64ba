/**
 * check-doc-references run over a small tree in memory before it reads the repository: a pattern
 * broken by an edit fails the run instead of passing everything.
 */
import { checkTree } from "./check-tree.mjs";
import { makeTree } from "./resolve.mjs";

/** A small tree in memory, and what the check must (and must not) report in it. */
const SAMPLES = {
  scopes: { "docs/client-requirements.md": "packages/client/" },
  files: {
    "README.md": [
      "See [docs](docs/guide.md#running-it) and [gone](docs/old.md).",
      "[a](https://github.com/golemcloud/golem-stream/blob/main/docs/guide.md#guide) [b](https://github.com/golemcloud/golem-stream/tree/main/packages/server#readme)",
      "[c](https://github.com/golemcloud/golem-stream/blob/main/docs/moved.md) [d](https://github.com/golemcloud/golem-stream#nothing) [e](https://github.com/golemcloud/golem-stream/issues)",
    ].join("\n"),
    "docs/guide.md": [
      "# Guide",
      "## Running it",
      "Read [the server](../packages/server/README.md#options) and [here](#running-it) and [nowhere](#missing).",
      "The rules are in `packages/server/src/admission/rules.ts` and `packages/server/src/sessions/session-runtime.ts`.",
      "Any package's `src/admission/rules.ts`; the `sessions/gone.ts` part; `live-session.ts` and `rules.ts`.",
      "Not paths: `*.test.ts`, `<pkg>/src/x.ts`, `@golem-stream/wire/internal`, `dist/index.js`, `https://x.dev/a.md`; `@golem-stream/wire/fast`, @golem-stream/nothing, @golem-stream/wire/vectors/a.json, @golem-stream/wire.",
      "```sh",
      'node scripts/missing.mjs `packages/nothing.ts`; import "@golem-stream/wire/gone"',
      "```",
      "Run `node scripts/check.mjs --flag` then `node scripts/absent.mjs`.",
      "In prose: docs/gone.md, docs/guide.md, Node.js, rules.ts and gone.ts (see [x](guide.md)).",
      "Tested in loopback.test and `cuts.e2e.test`, not by RegExp.test or `/x/.test(s)`; see `cuts.e2e.test.ts`, `cuts.test-d.ts`.",
    ].join("\n"),
    "packages/server/package.json": "{}",
    "packages/server/README.md":
      "## Options\nSee `src/admission/rules.ts` and `src/nothing.ts` and [src](src/admission/), `src/admission/`, `src/gone/`.\n",
    "packages/server/src/admission/rules.ts": [
      "// Moved here from session-runtime.ts; see ./rules.ts and admission/rules.ts.",
      'const s = "// not a comment: gone.ts"; const r = /\\/\\/ also.ts/;',
      "/* The cache (cache.ts, and gone.ts's part), tested by cache.test; SAFE.test(name) and unreachable.test(x) are calls */",
      "export const x = 1; // trailing: rules.ts, from @golem-stream/wire/old",
    ].join("\n"),
    "docs/client-requirements.md": "Names in packages/client: `agent.ts`, `rules.ts`, output.property.test, cuts.e2e.test.\n",
    "packages/client/src/agent.ts": "",
    "packages/client/test/output.property.test.ts": "",
    "scripts/check.mjs": "",
    "packages/wire/package.json": JSON.stringify({
      name: "@golem-stream/wire",
      exports: { ".": "./index.js", "./internal": "./internal.js", "./vectors/*": "./v/*" },
    }),
    "packages/server/test/cuts.e2e.test.ts": "",
    "packages/server/test/cuts.test-d.ts": "",
  },
  /** `file:line kind text` of every expected report, in order. */
  expected: [
    "README.md:1 link docs/old.md (no such file)",
    "README.md:3 link https://github.com/golemcloud/golem-stream/blob/main/docs/moved.md (no such file)",
    'README.md:3 anchor https://github.com/golemcloud/golem-stream#nothing (no heading "nothing" in README.md)',
    'docs/guide.md:3 anchor #missing (no heading "missing" in docs/guide.md)',
    "docs/guide.md:4 code path packages/server/src/sessions/session-runtime.ts",
    "docs/guide.md:5 code path sessions/gone.ts",
    "docs/guide.md:5 file name live-session.ts",
    "docs/guide.md:6 package entry @golem-stream/wire/fast",
    "docs/guide.md:6 package @golem-stream/nothing",
    "docs/guide.md:8 package entry @golem-stream/wire/gone",
    "docs/guide.md:10 code path scripts/absent.mjs",
    "docs/client-requirements.md:1 file name rules.ts",
    "docs/client-requirements.md:1 test name cuts.e2e.test",
    "docs/guide.md:11 prose path docs/gone.md",
    "docs/guide.md:11 file name gone.ts",
    "docs/guide.md:12 test name loopback.test",
    "packages/server/README.md:2 code path src/nothing.ts",
    "packages/server/README.md:2 code path src/gone/",
    "packages/server/src/admission/rules.ts:1 comment session-runtime.ts",
    "packages/server/src/admission/rules.ts:3 comment cache.ts",
    "packages/server/src/admission/rules.ts:3 comment gone.ts",
    "packages/server/src/admission/rules.ts:3 test name cache.test",
    "packages/server/src/admission/rules.ts:4 package entry @golem-stream/wire/old",
  ],
};

export function checkSamples() {
  const paths = Object.keys(SAMPLES.files);
  const tree = makeTree(paths, (path) => SAMPLES.files[path], { scopes: SAMPLES.scopes });
  const got = checkTree(tree).map((hit) => `${hit.file}:${hit.line} ${hit.kind} ${hit.text}`);
  const wrong = [];
  for (const line of SAMPLES.expected) if (!got.includes(line)) wrong.push(`not caught: ${line}`);
  for (const line of got) if (!SAMPLES.expected.includes(line)) wrong.push(`caught by mistake: ${line}`);
  return wrong;
}
