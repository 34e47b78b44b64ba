/**
 * Generated source type-checks as a user's strict build would compile it
 * (strict, NodeNext, noUncheckedIndexedAccess, exactOptionalPropertyTypes),
 * importing this package by name, and the contracts it declares carry the
 * types `JsOf` gives hand-written ones. Compiled with the TypeScript API in a
 * scratch folder inside the package (a package may import itself by name).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { afterAll, describe, expect, it } from "vitest";
import { contractSource } from "../src/codegen/index.js";
import { echoContract } from "../src/demo.js";
import { kitchenSink } from "./support/kitchen-sink.js";

const scratch = mkdtempSync(join(import.meta.dirname, ".tsc-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function compile(files: Record<string, string>): string[] {
  for (const [name, text] of Object.entries(files)) writeFileSync(join(scratch, name), text);
  const options: ts.CompilerOptions = {
    strict: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    noUncheckedIndexedAccess: true,
    exactOptionalPropertyTypes: true,
    declaration: true,
    noEmit: false,
    rootDir: scratch,
    outDir: join(scratch, "out"),
    skipLibCheck: true,
    types: [],
  };
  const program = ts.createProgram(
    Object.keys(files).map((name) => join(scratch, name)),
    options,
  );
  const emitted = program.emit();
  return [...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics].map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
}

describe("generated source compiles", () => {
  it("the hand-written every-feature catalogue and the demo, with declarations, and its types are JsOf's", () => {
    const generated = contractSource([...kitchenSink, { ...echoContract.graphs, name: "demo-echo" }]).source;
    const use = `
import type { ConstructorArgs, MethodParams, MethodResult, StreamRefs } from "@golem-stream/contract";
import { kitchenSinkContract, demoEchoContract } from "./agents.js";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const check = <T extends true>(): T => true as T;
type Recursive = MethodParams<(typeof kitchenSinkContract)["methods"]["recursive"], StreamRefs>;
check<Equal<Recursive["n"], number>>();
check<Equal<Recursive["tree"]["value"], number>>();
check<Equal<Recursive["tree"]["kids"], unknown[]>>();
check<Equal<ConstructorArgs<typeof kitchenSinkContract>["s64"], bigint>>();
check<Equal<MethodResult<(typeof demoEchoContract)["methods"]["digest"], StreamRefs>, { bytes: bigint; sha256: string }>>();
type Composites = MethodParams<(typeof kitchenSinkContract)["methods"]["composites"], StreamRefs>;
check<Equal<Composites["record"], { x: number; 0: number; __proto__: boolean; "with space": string }>>();
check<Equal<Composites["variant"], { case: "none" } | { case: "some"; value: bigint } | { case: "1" }>>();
check<Equal<Composites["secret"], never>>();
// @ts-expect-error the demo's count takes numbers
const wrong: MethodParams<(typeof demoEchoContract)["methods"]["count"], StreamRefs> = { to: "1", delayMs: 0 };
void wrong;
`;
    expect(compile({ "agents.ts": generated, "use.ts": use })).toEqual([]);
  });

  it("a type error in generated source is reported (the check can fail)", () => {
    const generated = contractSource([{ ...echoContract.graphs }]).source.replace("t.u32()", "t.u32(7)");
    expect(compile({ "agents.ts": generated }).length).toBeGreaterThan(0);
  });
});
