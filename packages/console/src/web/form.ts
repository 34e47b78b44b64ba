/**
 * Forms from schemas: one field per SchemaType node, each reading back a
 * native SchemaValue (`{kind, value}`) whose stream leaves are the client's
 * input bindings. Records, tuples, lists, maps, options, results, variants,
 * enums, flags and unions get their own controls; `stream<u8>` a file
 * picker, `stream<binary>` a multi-file picker (one item per file),
 * `stream<string>` a text box (one item per line), other streams a text box
 * of one native JSON value per line. Kinds without a natural control take
 * their native JSON payload.
 */
import { inputStream, type ParamNode } from "@golem-stream/client";
import { v, type SchemaGraph, type SchemaType } from "@golem-stream/schema-value";

export interface Field {
  readonly element: HTMLElement;
  /**
   * The value as entered, read now (a chosen file's bytes included); rejects with a `FormError`
   * naming the field when it is not valid.
   */
  read(): Promise<ParamNode>;
}

export class FormError extends Error {}

let nextId = 0;
const uid = (): string => `f${++nextId}`;

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Partial<HTMLElementTagNameMap[K]> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
}

/** A labelled control: `label` is its accessible name (what a person, and a test, finds it by); the hint describes it. */
function labelled(label: string, control: HTMLElement, hint?: string): HTMLElement {
  control.id ||= uid();
  const wrapper = el("div", { className: "field" }, el("label", { htmlFor: control.id, textContent: label }), control);
  if (hint !== undefined) {
    const described = el("span", { className: "hint", textContent: hint, id: uid() });
    control.setAttribute("aria-describedby", described.id);
    wrapper.append(described);
  }
  return wrapper;
}

const SMALL_INTEGERS: Readonly<Record<string, [number, number]>> = {
  s8: [-128, 127],
  s16: [-32768, 32767],
  s32: [-2147483648, 2147483647],
  u8: [0, 255],
  u16: [0, 65535],
  u32: [0, 4294967295],
};

/** The largest finite f32, as f32's canonical number. */
const F32_MAX = "3.4028235e38";

const node = (kind: string, value: unknown): ParamNode => ({ kind, value }) as ParamNode;

/** The fields of a parameter record (the root of a method's or constructor's graph), one per record field. */
export function recordFields(graph: SchemaGraph, container: HTMLElement): () => Promise<ParamNode> {
  const root = graph.resolve(graph.root);
  const field = buildField(graph, root, "parameters", "");
  if (root.kind === "record") {
    // The record's own fieldset would repeat the legend: show its children directly.
    container.append(...Array.from(field.element.childNodes).filter((child) => !(child instanceof HTMLLegendElement)));
  } else container.append(field.element);
  if (root.kind === "record" && root.value.fields.length === 0) container.append(el("p", { className: "hint", textContent: "(none)" }));
  return () => field.read();
}

export function buildField(graph: SchemaGraph, declared: SchemaType, label: string, path: string): Field {
  const type = graph.resolve(declared);
  const where = path === "" ? label : path;
  const fail = (message: string): never => {
    throw new FormError(`${where}: ${message}`);
  };
  switch (type.kind) {
    case "bool": {
      const input = el("input", { type: "checkbox" });
      return { element: labelled(label, input), read: async () => node("bool", input.checked) };
    }
    case "s8":
    case "s16":
    case "s32":
    case "u8":
    case "u16":
    case "u32": {
      const [min, max] = SMALL_INTEGERS[type.kind]!;
      const input = el("input", { type: "number", step: "1", min: String(min), max: String(max), value: "0" });
      return {
        element: labelled(label, input, type.kind),
        read: async () => {
          const value = Number(input.value);
          if (input.value.trim() === "" || !Number.isInteger(value) || value < min || value > max)
            fail(`a whole number from ${min} to ${max}`);
          return node(type.kind, value);
        },
      };
    }
    case "s64":
    case "u64": {
      const input = el("input", { inputMode: "numeric", value: "0" });
      return {
        element: labelled(label, input, type.kind),
        read: async () => {
          const text = input.value.trim();
          if (!(type.kind === "u64" ? /^\d+$/ : /^-?\d+$/).test(text)) fail(`a whole number (${type.kind})`);
          const value = BigInt(text);
          const [lo, hi] = type.kind === "u64" ? [0n, 2n ** 64n - 1n] : [-(2n ** 63n), 2n ** 63n - 1n];
          if (value < lo || value > hi) fail(`out of range for ${type.kind}`);
          return node(type.kind, value.toString());
        },
      };
    }
    case "f32":
    case "f64": {
      const input = el("input", { type: "number", step: "any", value: "0" });
      return {
        element: labelled(label, input, type.kind),
        read: async () => {
          const value = Number(input.value);
          if (input.value.trim() === "" || !Number.isFinite(value)) fail("a number");
          if (type.kind === "f64") return node("f64", value);
          // The f32 the value rounds to, as its canonical number; past the largest f32 it rounds to no finite f32.
          try {
            return v.f32(value) as ParamNode;
          } catch {
            return fail(`a number from -${F32_MAX} to ${F32_MAX}`);
          }
        },
      };
    }
    case "char": {
      const input = el("input", { maxLength: 2, size: 3 });
      return {
        element: labelled(label, input, "char"),
        read: async () => {
          if (Array.from(input.value).length !== 1) fail("exactly one character");
          return node("char", input.value);
        },
      };
    }
    case "string":
      return textField(label, "string", (text) => node("string", text));
    case "text":
      return textField(label, "text", (text) => node("text", { text }));
    case "url":
      return textField(label, "url", (url) => node("url", { url }));
    case "path":
      return textField(label, "path", (path) => node("path", { path }));
    case "datetime":
      return textField(label, "datetime, RFC 3339 UTC (2026-12-01T17:00:00Z)", (value) => node("datetime", { value }));
    case "duration":
      return textField(label, "duration in nanoseconds", (nanoseconds) => node("duration", { nanoseconds }));
    case "binary": {
      const input = el("input", { type: "file" });
      return {
        element: labelled(label, input, "binary: a small file"),
        // The file chosen now, read now: not one chosen before, nor a read still under way.
        read: async () => {
          const file = input.files?.[0];
          if (file === undefined) return fail("choose a file");
          let buffer: ArrayBuffer;
          try {
            buffer = await file.arrayBuffer();
          } catch (error) {
            return fail(`${file.name} could not be read (${error instanceof Error ? error.message : String(error)})`);
          }
          const bytes = Array.from(new Uint8Array(buffer));
          return node("binary", file.type === "" ? { bytes } : { bytes, mimeType: file.type });
        },
      };
    }
    case "record": {
      const set = el("fieldset", {}, el("legend", { textContent: label }));
      const fields = type.value.fields.map((f) => buildField(graph, f.body, f.name, `${where}.${f.name}`));
      set.append(...fields.map((f) => f.element));
      return { element: set, read: async () => node("record", { fields: await readAll(fields) }) };
    }
    case "tuple": {
      const set = el("fieldset", {}, el("legend", { textContent: label }));
      const fields = type.value.elements.map((t, i) => buildField(graph, t, `${i}`, `${where}[${i}]`));
      set.append(...fields.map((f) => f.element));
      return { element: set, read: async () => node("tuple", { elements: await readAll(fields) }) };
    }
    case "fixed-list": {
      const set = el("fieldset", {}, el("legend", { textContent: `${label} (${type.value.length})` }));
      const fields = Array.from({ length: type.value.length }, (_, i) => buildField(graph, type.value.element, `${i}`, `${where}[${i}]`));
      set.append(...fields.map((f) => f.element));
      return { element: set, read: async () => node("fixed-list", { elements: await readAll(fields) }) };
    }
    case "list":
      return growingList(
        label,
        (i) => buildField(graph, type.value.element, `${i}`, `${where}[${i}]`),
        async (fields) => node("list", { elements: await readAll(fields) }),
      );
    case "map":
      return growingList(
        label,
        (i) => {
          const key = buildField(graph, type.value.key, "key", `${where}[${i}].key`);
          const value = buildField(graph, type.value.value, "value", `${where}[${i}].value`);
          const row = el("div", { className: "row" }, key.element, value.element);
          return { element: row, read: async () => [await key.read(), await value.read()] as unknown as ParamNode };
        },
        async (fields) => node("map", { entries: await readAll(fields) }),
      );
    case "option": {
      const present = el("input", { type: "checkbox" });
      const inner = buildField(graph, type.value.inner, "value", `${where}?`);
      inner.element.hidden = true;
      present.addEventListener("change", () => (inner.element.hidden = !present.checked));
      const set = el("fieldset", {}, el("legend", { textContent: label }), labelled("present", present), inner.element);
      return { element: set, read: async () => node("option", { inner: present.checked ? await inner.read() : null }) };
    }
    case "result": {
      const spec = type.value.spec;
      return choice(
        label,
        [
          { name: "ok", type: spec.ok },
          { name: "err", type: spec.err },
        ],
        (name, payload) => buildField(graph, payload, name, `${where}.${name}`),
        (index, payload) => node("result", { tag: index === 0 ? "ok" : "err", value: payload ?? null }),
      );
    }
    case "variant":
      return choice(
        label,
        type.value.cases.map((c) => ({ name: c.name, type: c.payload })),
        (name, payload) => buildField(graph, payload, name, `${where}.${name}`),
        (index, payload) => node("variant", payload === undefined ? { case: index } : { case: index, payload }),
      );
    case "union":
      return choice(
        label,
        type.value.spec.branches.map((b) => ({ name: b.tag, type: b.body })),
        (name, payload) => buildField(graph, payload, name, `${where}.${name}`),
        (index, payload) => node("union", { tag: type.value.spec.branches[index]!.tag, body: payload }),
      );
    case "enum": {
      const select = el("select", {}, ...type.value.cases.map((name, i) => el("option", { value: String(i), textContent: name })));
      return { element: labelled(label, select, "enum"), read: async () => node("enum", { case: Number(select.value) }) };
    }
    case "flags": {
      const boxes = type.value.flags.map((name) => ({ name, box: el("input", { type: "checkbox" }) }));
      const set = el(
        "fieldset",
        {},
        el("legend", { textContent: `${label} (flags)` }),
        ...boxes.map(({ name, box }) => labelled(name, box)),
      );
      return { element: set, read: async () => node("flags", { bits: boxes.map(({ box }) => box.checked) }) };
    }
    case "stream":
      return streamField(graph, type.value.inner, label, where);
    default: {
      // quantity and host-managed kinds: the native payload as JSON.
      const input = el("input", { placeholder: "native JSON payload" });
      return {
        element: labelled(label, input, `${type.kind}: its native JSON payload`),
        read: async () => {
          try {
            return node(type.kind, JSON.parse(input.value) as unknown);
          } catch {
            return fail("not JSON");
          }
        },
      };
    }
  }
}

/** The fields' values in order; the first invalid one is the one named. */
async function readAll(fields: readonly Field[]): Promise<ParamNode[]> {
  const values: ParamNode[] = [];
  for (const field of fields) values.push(await field.read());
  return values;
}

function textField(label: string, hint: string, make: (text: string) => ParamNode): Field {
  const input = el("input", { size: 40 });
  return { element: labelled(label, input, hint), read: async () => make(input.value) };
}

/** A list whose rows a person adds and removes. */
function growingList(label: string, makeRow: (index: number) => Field, read: (fields: Field[]) => Promise<ParamNode>): Field {
  const rows: Field[] = [];
  const list = el("div");
  const add = el("button", { type: "button", className: "secondary", textContent: `Add to ${label}` });
  const set = el("fieldset", {}, el("legend", { textContent: `${label} (list)` }), list, add);
  add.addEventListener("click", () => {
    const row = makeRow(rows.length);
    const remove = el("button", { type: "button", className: "secondary", textContent: "Remove" });
    const wrapper = el("div", { className: "row" }, row.element, remove);
    rows.push(row);
    remove.addEventListener("click", () => {
      rows.splice(rows.indexOf(row), 1);
      wrapper.remove();
    });
    list.append(wrapper);
  });
  return { element: set, read: () => read(rows) };
}

/** A choice of cases, each with an optional payload form (variants, results, unions). */
function choice(
  label: string,
  cases: readonly { name: string; type: SchemaType | undefined }[],
  build: (name: string, type: SchemaType) => Field,
  read: (index: number, payload: ParamNode | undefined) => ParamNode,
): Field {
  const select = el("select", {}, ...cases.map((c, i) => el("option", { value: String(i), textContent: c.name })));
  const payloads = cases.map((c) => (c.type === undefined ? undefined : build(c.name, c.type)));
  const set = el("fieldset", {}, el("legend", { textContent: label }), labelled("case", select));
  for (const payload of payloads) if (payload !== undefined) set.append(payload.element);
  const show = (): void => payloads.forEach((payload, i) => payload !== undefined && (payload.element.hidden = i !== Number(select.value)));
  select.addEventListener("change", show);
  show();
  return {
    element: set,
    read: async () => {
      const index = Number(select.value);
      return read(index, await payloads[index]?.read());
    },
  };
}

/** Lines of a text box, without the empty line a final newline leaves. */
function lines(text: string): string[] {
  const all = text.split(/\r?\n/);
  if (all.at(-1) === "") all.pop();
  return all;
}

function streamField(graph: SchemaGraph, innerDeclared: SchemaType, label: string, where: string): Field {
  const inner = graph.resolve(innerDeclared);
  if (inner.kind === "u8" || inner.kind === "binary") {
    const input = el("input", { type: "file", multiple: inner.kind === "binary" });
    const hint = inner.kind === "u8" ? "stream<u8>: a file, sent as its bytes" : "stream<binary>: files, one item each";
    return {
      element: labelled(label, input, hint),
      read: async () => {
        const files = Array.from(input.files ?? []);
        if (inner.kind === "u8") {
          if (files.length !== 1) throw new FormError(`${where}: choose a file`);
          return inputStream.bytes(files[0]!);
        }
        return inputStream.binary(files);
      },
    };
  }
  const box = el("textarea", { rows: 5, placeholder: inner.kind === "string" ? "one item per line" : "one native JSON value per line" });
  if (inner.kind === "string") {
    return { element: labelled(label, box, "stream<string>: one item per line"), read: async () => inputStream.strings(lines(box.value)) };
  }
  return {
    element: labelled(label, box, `stream<${inner.kind}>: one native JSON value per line, e.g. {"kind":"u32","value":7}`),
    read: async () => {
      const items = lines(box.value).map((line, i) => {
        try {
          return JSON.parse(line) as ParamNode;
        } catch {
          throw new FormError(`${where}: line ${i + 1} is not JSON`);
        }
      });
      return inputStream.values(items);
    },
  };
}
