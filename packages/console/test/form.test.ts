/**
 * Forms from schemas, in memory (happy-dom): which controls each schema kind gets, and what the
 * entries read back as, the native SchemaValue the client sends. A wrong entry is a `FormError`
 * naming the field by its path.
 */
import { describe, expect, it } from "vitest";
import { InputStream, type ParamNode } from "@golem-stream/client";
import { decodeSchemaGraph, t, type SchemaType } from "@golem-stream/schema-value";
import { buildField, FormError, recordFields, type Field } from "../src/web/form.js";

function fieldFor(type: SchemaType, label = "x"): Field {
  const graph = decodeSchemaGraph(t.graph(type), { streams: "allowed" });
  return buildField(graph, graph.root, label, "");
}

/** The control labelled `label` inside `field` (what a person finds it by). */
function control<T extends HTMLElement = HTMLInputElement>(root: HTMLElement, label: string): T {
  const found = Array.from(root.querySelectorAll("label")).find((l) => l.textContent === label);
  if (found === undefined) throw new Error(`no control labelled ${label}`);
  const target = root.querySelector(`#${found.htmlFor}`);
  if (target === null) throw new Error(`label ${label} points at nothing`);
  return target as T;
}

function enter(field: Field, label: string, value: string): void {
  control(field.element, label).value = value;
}

async function readError(field: Field): Promise<string> {
  try {
    await field.read();
  } catch (error) {
    expect(error).toBeInstanceOf(FormError);
    return (error as Error).message;
  }
  throw new Error("read() accepted the entry");
}

function click(root: HTMLElement, text: string, nth = 0): void {
  const buttons = Array.from(root.querySelectorAll("button")).filter((b) => b.textContent === text);
  const button = buttons[nth];
  if (button === undefined) throw new Error(`no button ${text} #${nth}`);
  button.click();
}

function choose(select: HTMLSelectElement, index: number): void {
  select.value = String(index);
  select.dispatchEvent(new Event("change"));
}

async function items(node: ParamNode): Promise<unknown[]> {
  expect(node).toBeInstanceOf(InputStream);
  // `claim` is the client's internal reading of a binding (stripped from its public types); the
  // test reads the items the form put there the way the client's session would.
  const pull = (node as unknown as { claim(): AsyncIterator<unknown> }).claim();
  const out: unknown[] = [];
  for (let next = await pull.next(); next.done !== true; next = await pull.next()) out.push(next.value);
  return out;
}

describe("scalars", () => {
  it("bool is a checkbox", async () => {
    const field = fieldFor(t.bool());
    expect(await field.read()).toEqual({ kind: "bool", value: false });
    control(field.element, "x").checked = true;
    expect(await field.read()).toEqual({ kind: "bool", value: true });
  });

  it.each([
    ["u8", "255", 255],
    ["u8", "0", 0],
    ["s8", "-128", -128],
    ["u16", "65535", 65535],
    ["s16", "-32768", -32768],
    ["u32", "4294967295", 4294967295],
    ["s32", "-2147483648", -2147483648],
  ] as const)("%s accepts %s, its bound", async (kind, text, value) => {
    const field = fieldFor(t[kind]());
    enter(field, "x", text);
    expect(await field.read()).toEqual({ kind, value });
  });

  it.each([
    ["u8", "256", "x: a whole number from 0 to 255"],
    ["u8", "-1", "x: a whole number from 0 to 255"],
    ["s8", "-129", "x: a whole number from -128 to 127"],
    ["u32", "1.5", "x: a whole number from 0 to 4294967295"],
    ["u16", "", "x: a whole number from 0 to 65535"],
  ] as const)("%s refuses %j", async (kind, text, message) => {
    const field = fieldFor(t[kind]());
    enter(field, "x", text);
    expect(await readError(field)).toBe(message);
  });

  it("u64 and s64 are read as decimal text, exactly, to their bounds", async () => {
    const u64 = fieldFor(t.u64());
    enter(u64, "x", " 18446744073709551615 ");
    expect(await u64.read()).toEqual({ kind: "u64", value: "18446744073709551615" });
    enter(u64, "x", "18446744073709551616");
    expect(await readError(u64)).toBe("x: out of range for u64");
    enter(u64, "x", "-1");
    expect(await readError(u64)).toBe("x: a whole number (u64)");
    const s64 = fieldFor(t.s64());
    enter(s64, "x", "-9223372036854775808");
    expect(await s64.read()).toEqual({ kind: "s64", value: "-9223372036854775808" });
    enter(s64, "x", "9223372036854775808");
    expect(await readError(s64)).toBe("x: out of range for s64");
    enter(s64, "x", "1e3");
    expect(await readError(s64)).toBe("x: a whole number (s64)");
  });

  it("f32 and f64 take a finite number", async () => {
    const field = fieldFor(t.f64());
    enter(field, "x", "-2.5");
    expect(await field.read()).toEqual({ kind: "f64", value: -2.5 });
    enter(field, "x", "");
    expect(await readError(field)).toBe("x: a number");
    const f32 = fieldFor(t.f32());
    enter(f32, "x", "0.25");
    expect(await f32.read()).toEqual({ kind: "f32", value: 0.25 });
  });

  it("f32 is checked against f32's range and read as the f32 it rounds to", async () => {
    const field = fieldFor(t.f32());
    for (const [text, value] of [
      ["3.4028235e38", 3.4028235e38],
      ["-3.4028235e38", -3.4028235e38],
      ["16777217", 16777216],
      ["0.1", 0.1],
    ] as const) {
      enter(field, "x", text);
      expect(await field.read()).toEqual({ kind: "f32", value });
    }
    for (const text of ["1e39", "-1e39", "3.5e38"]) {
      enter(field, "x", text);
      expect(await readError(field)).toBe("x: a number from -3.4028235e38 to 3.4028235e38");
    }
    // An f64 takes what an f32 does not.
    const f64 = fieldFor(t.f64());
    enter(f64, "x", "1e39");
    expect(await f64.read()).toEqual({ kind: "f64", value: 1e39 });
  });

  it("char is exactly one character, counted in code points", async () => {
    const field = fieldFor(t.char());
    enter(field, "x", "😀");
    expect(await field.read()).toEqual({ kind: "char", value: "😀" });
    enter(field, "x", "ab");
    expect(await readError(field)).toBe("x: exactly one character");
    enter(field, "x", "");
    expect(await readError(field)).toBe("x: exactly one character");
  });

  it("text kinds take the text as entered, in their native shapes", async () => {
    const cases: [SchemaType, ParamNode][] = [
      [t.string(), { kind: "string", value: " a b " }],
      [t.text(), { kind: "text", value: { text: " a b " } }],
      [t.url(), { kind: "url", value: { url: " a b " } }],
      [t.path(), { kind: "path", value: { path: " a b " } }],
      [t.datetime(), { kind: "datetime", value: { value: " a b " } }],
      [t.duration(), { kind: "duration", value: { nanoseconds: " a b " } }],
    ];
    for (const [type, expected] of cases) {
      const field = fieldFor(type);
      enter(field, "x", " a b ");
      expect(await field.read()).toEqual(expected);
    }
  });

  it("binary is the file chosen when it is read, with its MIME type; without one it is named as missing", async () => {
    const field = fieldFor(t.binary());
    const picker = control(field.element, "x");
    let files: File[] = [new File([new Uint8Array([1, 2])], "a.bin", { type: "application/x-a" })];
    Object.defineProperty(picker, "files", { get: () => files });
    expect(await field.read()).toEqual({ kind: "binary", value: { bytes: [1, 2], mimeType: "application/x-a" } });
    files = [new File([new Uint8Array([3])], "b.bin")];
    expect(await field.read()).toEqual({ kind: "binary", value: { bytes: [3] } });
    files = [new File([], "empty.bin")];
    expect(await field.read()).toEqual({ kind: "binary", value: { bytes: [] } });
    files = [];
    expect(await readError(field)).toBe("x: choose a file");
  });

  it("kinds without a control of their own take their native JSON payload", async () => {
    const field = fieldFor(t.quantity({ baseUnit: "m", allowedSuffixes: [] }));
    enter(field, "x", '{"mantissa":"15","scale":1,"unit":"m"}');
    expect(await field.read()).toEqual({ kind: "quantity", value: { mantissa: "15", scale: 1, unit: "m" } });
    enter(field, "x", "{mantissa");
    expect(await readError(field)).toBe("x: not JSON");
  });
});

describe("composites", () => {
  it("a record's fields are named by their path in errors", async () => {
    const field = fieldFor(t.record({ a: t.u8(), inner: t.record({ b: t.bool(), c: t.s8() }) }), "params");
    enter(field, "a", "7");
    control(field.element, "b").checked = true;
    enter(field, "c", "-3");
    expect(await field.read()).toEqual({
      kind: "record",
      value: {
        fields: [
          { kind: "u8", value: 7 },
          {
            kind: "record",
            value: {
              fields: [
                { kind: "bool", value: true },
                { kind: "s8", value: -3 },
              ],
            },
          },
        ],
      },
    });
    enter(field, "c", "300");
    expect(await readError(field)).toBe("params.inner.c: a whole number from -128 to 127");
  });

  it("tuples and fixed lists have one control per element, named by index", async () => {
    const tuple = fieldFor(t.tuple(t.bool(), t.u8()));
    enter(tuple, "1", "9");
    expect(await tuple.read()).toEqual({
      kind: "tuple",
      value: {
        elements: [
          { kind: "bool", value: false },
          { kind: "u8", value: 9 },
        ],
      },
    });
    enter(tuple, "1", "x");
    expect(await readError(tuple)).toBe("x[1]: a whole number from 0 to 255");
    const fixed = fieldFor(t.fixedList(t.string(), 2));
    expect(fixed.element.querySelector("legend")?.textContent).toBe("x (2)");
    enter(fixed, "0", "a");
    enter(fixed, "1", "b");
    expect(await fixed.read()).toEqual({
      kind: "fixed-list",
      value: {
        elements: [
          { kind: "string", value: "a" },
          { kind: "string", value: "b" },
        ],
      },
    });
  });

  it("a list grows and shrinks by its buttons, in order", async () => {
    const field = fieldFor(t.list(t.u8()));
    expect(await field.read()).toEqual({ kind: "list", value: { elements: [] } });
    click(field.element, "Add to x");
    click(field.element, "Add to x");
    click(field.element, "Add to x");
    enter(field, "0", "10");
    enter(field, "1", "11");
    enter(field, "2", "12");
    click(field.element, "Remove", 1);
    expect(await field.read()).toEqual({
      kind: "list",
      value: {
        elements: [
          { kind: "u8", value: 10 },
          { kind: "u8", value: 12 },
        ],
      },
    });
    enter(field, "2", "-1");
    expect(await readError(field)).toBe("x[2]: a whole number from 0 to 255");
  });

  it("a map is a list of key and value rows", async () => {
    const field = fieldFor(t.map(t.string(), t.u32()));
    click(field.element, "Add to x");
    enter(field, "key", "k");
    enter(field, "value", "5");
    expect(await field.read()).toEqual({
      kind: "map",
      value: {
        entries: [
          [
            { kind: "string", value: "k" },
            { kind: "u32", value: 5 },
          ],
        ],
      },
    });
    enter(field, "value", "");
    expect(await readError(field)).toBe("x[0].value: a whole number from 0 to 4294967295");
  });

  it("an option reads its value only when present is checked", async () => {
    const field = fieldFor(t.option(t.u8()));
    enter(field, "value", "not read while absent");
    expect(await field.read()).toEqual({ kind: "option", value: { inner: null } });
    const present = control(field.element, "present");
    present.checked = true;
    present.dispatchEvent(new Event("change"));
    expect(control(field.element, "value").closest(".field")?.hasAttribute("hidden")).toBe(false);
    enter(field, "value", "4");
    expect(await field.read()).toEqual({ kind: "option", value: { inner: { kind: "u8", value: 4 } } });
    enter(field, "value", "x");
    expect(await readError(field)).toBe("x?: a whole number from 0 to 255");
  });

  it("a result is a choice of ok and err, each with its payload or null", async () => {
    const field = fieldFor(t.result({ ok: t.u8() }));
    enter(field, "ok", "1");
    expect(await field.read()).toEqual({ kind: "result", value: { tag: "ok", value: { kind: "u8", value: 1 } } });
    choose(control<HTMLSelectElement>(field.element, "case"), 1);
    expect(await field.read()).toEqual({ kind: "result", value: { tag: "err", value: null } });
  });

  it("a variant shows only the chosen case's payload and reads the case by index", async () => {
    const field = fieldFor(t.variant({ circle: t.f64(), square: t.u32(), none: null }));
    const select = control<HTMLSelectElement>(field.element, "case");
    const square = control(field.element, "square").closest(".field") as HTMLElement;
    expect(square.hidden).toBe(true);
    choose(select, 1);
    expect(square.hidden).toBe(false);
    enter(field, "square", "3");
    expect(await field.read()).toEqual({ kind: "variant", value: { case: 1, payload: { kind: "u32", value: 3 } } });
    choose(select, 2);
    expect(await field.read()).toEqual({ kind: "variant", value: { case: 2 } });
    choose(select, 0);
    enter(field, "circle", "");
    expect(await readError(field)).toBe("x.circle: a number");
  });

  it("a union reads the chosen branch's tag and body", async () => {
    const field = fieldFor(
      t.union(
        { tag: "n", body: t.string(), discriminator: { rule: "prefix", value: { prefix: "n:" } } },
        { tag: "s", body: t.string(), discriminator: { rule: "prefix", value: { prefix: "s:" } } },
      ),
    );
    choose(control<HTMLSelectElement>(field.element, "case"), 1);
    enter(field, "s", "s:hi");
    expect(await field.read()).toEqual({ kind: "union", value: { tag: "s", body: { kind: "string", value: "s:hi" } } });
  });

  it("enums and flags read the case index and one bit per flag", async () => {
    const colour = fieldFor(t.enum(["red", "green", "blue"]));
    choose(control<HTMLSelectElement>(colour.element, "x"), 2);
    expect(await colour.read()).toEqual({ kind: "enum", value: { case: 2 } });
    const access = fieldFor(t.flags(["read", "write", "admin"]));
    control(access.element, "write").checked = true;
    expect(await access.read()).toEqual({ kind: "flags", value: { bits: [false, true, false] } });
  });

  it("a def reference gets the form of its body", async () => {
    const graph = decodeSchemaGraph(t.graph(t.record({ p: t.ref("point") }), { point: t.tuple(t.s8(), t.s8()) }));
    const field = buildField(graph, graph.root, "x", "");
    enter(field, "1", "-1");
    expect(await field.read()).toEqual({
      kind: "record",
      value: {
        fields: [
          {
            kind: "tuple",
            value: {
              elements: [
                { kind: "s8", value: 0 },
                { kind: "s8", value: -1 },
              ],
            },
          },
        ],
      },
    });
  });
});

describe("streams", () => {
  it("stream<string> is one item per line, without the empty line a final newline leaves", async () => {
    const field = fieldFor(t.stream(t.string()));
    control<HTMLTextAreaElement>(field.element, "x").value = "a\r\n\nb\n";
    const node = await field.read();
    expect((node as InputStream).element).toBe("value");
    expect(await items(node)).toEqual(["a", "", "b"]);
  });

  it("other streams are one native JSON value per line, a bad line named by its number", async () => {
    const field = fieldFor(t.stream(t.u32()));
    const box = control<HTMLTextAreaElement>(field.element, "x");
    box.value = '{"kind":"u32","value":1}\n{"kind":"u32","value":2}';
    expect(await items(await field.read())).toEqual([
      { kind: "u32", value: 1 },
      { kind: "u32", value: 2 },
    ]);
    box.value = '{"kind":"u32","value":1}\n{kind';
    expect(await readError(field)).toBe("x: line 2 is not JSON");
  });

  it("stream<u8> needs a file; stream<binary> takes any number of files", async () => {
    const bytes = fieldFor(t.stream(t.u8()));
    expect(control(bytes.element, "x").type).toBe("file");
    expect(await readError(bytes)).toBe("x: choose a file");
    const binary = fieldFor(t.stream(t.binary()));
    expect(control(binary.element, "x").multiple).toBe(true);
    expect(((await binary.read()) as InputStream).element).toBe("binary");
  });
});

describe("recordFields", () => {
  it("shows a parameter record's fields without a legend of its own", async () => {
    const graph = decodeSchemaGraph(t.graph(t.record({ n: t.u8(), s: t.string() })));
    const container = document.createElement("div");
    const read = recordFields(graph, container);
    expect(container.querySelector("legend")).toBeNull();
    enter({ element: container, read }, "n", "1");
    expect(await read()).toEqual({
      kind: "record",
      value: {
        fields: [
          { kind: "u8", value: 1 },
          { kind: "string", value: "" },
        ],
      },
    });
    enter({ element: container, read }, "n", "x");
    await expect(read()).rejects.toThrow("parameters.n: a whole number from 0 to 255");
  });

  it("says (none) for a record without fields, and shows any other root as it is", async () => {
    const empty = document.createElement("div");
    recordFields(decodeSchemaGraph(t.graph(t.record({}))), empty);
    expect(empty.textContent).toBe("(none)");
    const other = document.createElement("div");
    const read = recordFields(decodeSchemaGraph(t.graph(t.u8())), other);
    expect(other.querySelector("input")).not.toBeNull();
    expect(await read()).toEqual({ kind: "u8", value: 0 });
  });
});
