/**
 * What every package's vitest config shares, so that one rule is written once:
 *
 * - `checked(thresholds?)`: a test that checks nothing fails (a helper whose
 *   assertions sit only on one branch, or a property whose body never reaches
 *   its expect, must not pass silently); and, with `thresholds`, coverage of
 *   `src/`. `pnpm test` records coverage in both phases and judges it on what
 *   they cover together (scripts/run-tests.sh); `npx vitest run --coverage`
 *   measures one run alone. Thresholds are the lowest coverage measured when
 *   they were set, rounded down (random property inputs and timing move it by
 *   a few tenths between runs); a package whose end-to-end tests reach some
 *   paths (retries, backpressure, reconnects) only at some timings sets them a
 *   point lower. They only go up: raise them when the tests cover more, never
 *   lower them to let a change through.
 * - `unitAndE2e(unit?, e2e?)`: the two projects of a package's tests. `unit`
 *   is `test/*.test.ts`, in memory (no sockets, processes or services), with
 *   vitest's default 5 s timeout; `e2e` is `test/*.e2e.test.ts` (real
 *   sockets, processes, databases, browsers) and `test/*.slow.test.ts` (pure
 *   tests that take seconds by nature: protocol-sized 8 MiB messages, the
 *   TypeScript compiler), with a 60 s timeout unless the package says
 *   otherwise. `pnpm test:unit` runs the first two packages at a time,
 *   `pnpm test:e2e` the second one package at a time, so end-to-end and slow
 *   tests never share two cores with another package's. The unit project
 *   imports the workspace's packages from their sources (`SOURCE_CONDITION`),
 *   so `pnpm test:unit` builds nothing; the e2e project runs the built ones
 *   (`dist/`), as the processes it starts and the packages' users do.
 * - `typeTests(tsconfig?)`: `test/*.test-d.ts` compiled with tsc, each
 *   `expectTypeOf` and `@ts-expect-error` checked, in the e2e project: tsc
 *   takes seconds, and reads the other packages' declarations in `dist/`.
 */
import type { TestProjectInlineConfiguration, TestUserConfig } from "vitest/config";

export interface Thresholds {
  readonly lines: number;
  readonly functions: number;
  readonly branches: number;
  readonly statements: number;
}

type ProjectTest = NonNullable<TestProjectInlineConfiguration["test"]>;

export function checked(thresholds?: Thresholds): TestUserConfig {
  return {
    expect: { requireAssertions: true },
    ...(thresholds === undefined
      ? {}
      : {
          coverage: {
            provider: "v8",
            // Absolute: the unit project loads the other workspace packages from their sources
            // (SOURCE_CONDITION), and a relative `src/**` also matched their `src/` files, so a
            // package's figures counted its dependencies' code. Vitest runs in the package's folder.
            include: [`${process.cwd()}/src/**/*.ts`],
            reporter: ["text-summary", "json-summary", "html"],
            thresholds: { ...thresholds },
          },
        }),
  };
}

const E2E = ["test/**/*.e2e.test.ts", "test/**/*.slow.test.ts"];

/**
 * The export condition each workspace package's `package.json` maps to its
 * TypeScript sources (`"golem-stream-source": "./src/index.ts"`, first in each
 * entry). Only the unit project asks for it: a unit test of the server imports
 * `@golem-stream/wire` from `packages/wire/src/`, transformed by vitest, so it
 * needs no build of wire (turbo.json: `test:unit` does not depend on `build`).
 * No other consumer names this condition, so Node, bundlers and TypeScript
 * resolve the published packages to `dist/` as before.
 */
export const SOURCE_CONDITION = "golem-stream-source";
const fromSources = { conditions: [SOURCE_CONDITION] };

export function unitAndE2e(unit: ProjectTest = {}, e2e: ProjectTest = {}): TestProjectInlineConfiguration[] {
  return [
    {
      extends: true,
      resolve: fromSources,
      ssr: { resolve: fromSources },
      // One worker process runs all of a package's unit files in turn, importing the sources once
      // (`isolate: false`): a fresh process per file spent most of the unit phase importing the
      // same modules again. A unit test therefore leaves no state behind: timers, globals and
      // stubs are restored in its `afterEach`, and module-level state it changes is reset.
      test: { name: "unit", include: ["test/**/*.test.ts"], exclude: E2E, isolate: false, ...unit },
    },
    { extends: true, test: { name: "e2e", include: E2E, testTimeout: 60_000, ...e2e } },
  ];
}

export function typeTests(tsconfig = "./tsconfig.types.json"): ProjectTest {
  return { typecheck: { enabled: true, include: ["test/**/*.test-d.ts"], tsconfig } };
}
