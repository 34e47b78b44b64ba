/**
 * The small machinery every message codec is built from: a `Codec` turns
 * one wire JSON value into its typed form and back, and `objectCodec`
 * enforces the common member rules of protocol section 2 (unknown, missing,
 * illegal members; optional members omitted rather than null).
 *
 * Each variant is described once, as a table of members; decoding and
 * encoding both read the same table, so they cannot disagree about a rule.
 */
import { ProtocolError } from "./errors.js";
import { type JsonObject, type JsonValue, getMember, isJsonObject } from "./json.js";

/** Decodes one wire JSON value, and encodes its typed form back. */
export interface Codec<T> {
  /** Wire JSON to typed value; throws `ProtocolError` naming `at`. */
  decode(json: JsonValue, at: string): T;
  /**
   * Typed value to wire JSON, checking the same rules as `decode`. The
   * argument is `unknown` because encoders are public and callers may pass
   * anything; a wrong value is a `ProtocolError`, never a `TypeError`.
   */
  encode(value: unknown, at: string): JsonValue;
}

export interface Member<V, Optional extends boolean> {
  readonly codec: Codec<V>;
  readonly optional: Optional;
}

/** A required member. */
export function required<V>(codec: Codec<V>): Member<V, false> {
  return { codec, optional: false };
}

/** An optional member: omitted when absent, never `null`. */
export function optional<V>(codec: Codec<V>): Member<V, true> {
  return { codec, optional: true };
}

type IsOptional<T, K extends keyof T> = {} extends Pick<T, K> ? true : false;

/** The member table of a typed object: one entry per member, optional exactly where `T` says so. */
export type MembersOf<T> = {
  readonly [K in keyof T]-?: Member<Exclude<T[K], undefined>, IsOptional<T, K>>;
};

interface AnyMember {
  readonly codec: Codec<unknown>;
  readonly optional: boolean;
}

/**
 * A member table prepared for use: a map from member name (immune to names
 * such as `__proto__` or `constructor`) and the count of required members,
 * so one pass over an incoming object checks everything.
 */
export class MemberTable<T> {
  private readonly byName: ReadonlyMap<string, AnyMember>;
  private readonly requiredCount: number;

  constructor(members: MembersOf<T>) {
    const entries = Object.entries(members as unknown as Readonly<Record<string, AnyMember>>);
    this.byName = new Map(entries);
    this.requiredCount = entries.filter(([, member]) => !member.optional).length;
  }

  /**
   * Reads the members of `json` into `into`. `reserved` names members the
   * caller has already checked (`version`, `type`, `kind`); any other member
   * not in the table is rejected. `what` names the object in errors.
   */
  decode(json: JsonObject, at: string, what: string, into: Record<string, unknown>, reserved: ReadonlySet<string> | null = null): void {
    let required = 0;
    for (const name in json) {
      const member = this.byName.get(name);
      if (member === undefined) {
        if (reserved !== null && reserved.has(name)) continue;
        throw invalidAt(at, `has member ${quoteName(name)}, which is not allowed in ${what}`);
      }
      const raw = json[name] as JsonValue;
      if (member.optional) {
        if (raw === null) throw invalidAt(memberPath(at, name), "must be omitted rather than null");
      } else {
        required++;
      }
      into[name] = member.codec.decode(raw, memberPath(at, name));
    }
    if (required === this.requiredCount) return;
    for (const [name, member] of this.byName) {
      if (!member.optional && getMember(json, name) === undefined) {
        throw invalidAt(memberPath(at, name), `is required in ${what}`);
      }
    }
  }

  /**
   * Writes the members of the typed `value` into `into`. A property the
   * table does not define (other than `reserved` ones) is an error rather
   * than silently dropped: a `mimeType` on a u8 batch is a caller's mistake
   * worth hearing about, not metadata to lose.
   */
  encode(value: unknown, at: string, what: string, into: JsonObject, reserved: ReadonlySet<string> | null = null): void {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw invalidAt(at, `must be an object (${what})`);
    }
    const source = value as Readonly<Record<string, unknown>>;
    for (const name of Object.keys(source)) {
      if (!this.byName.has(name) && (reserved === null || !reserved.has(name)) && source[name] !== undefined) {
        throw invalidAt(at, `has member ${quoteName(name)}, which is not allowed in ${what}`);
      }
    }
    for (const [name, member] of this.byName) {
      const raw = source[name];
      if (raw === undefined) {
        if (!member.optional) throw invalidAt(memberPath(at, name), `is required in ${what}`);
        continue;
      }
      if (raw === null && member.optional) {
        throw invalidAt(memberPath(at, name), "must be omitted rather than null");
      }
      into[name] = member.codec.encode(raw, memberPath(at, name));
    }
  }
}

/** `parent.name`, or `name` at the root. */
export function memberPath(parent: string, name: string): string {
  return parent === "" ? name : `${parent}.${name}`;
}

/** `parent[index]`. */
export function elementPath(parent: string, index: number): string {
  return `${parent}[${index}]`;
}

/** A strict-decoding failure at `at` (`invalid-message`). */
export function invalidAt(at: string, problem: string): ProtocolError {
  return new ProtocolError("invalid-message", `${at === "" ? "message" : at} ${problem}`, { path: at });
}

/** A section-6 limit exceeded at `at` (`limit-exceeded`). */
export function limitAt(at: string, problem: string): ProtocolError {
  return new ProtocolError("limit-exceeded", `${at === "" ? "message" : at} ${problem}`, { path: at });
}

/** A member name quoted for an error message, cut short: names come from the peer. */
export function quoteName(name: string): string {
  return JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}...` : name);
}

/**
 * A codec for a JSON object with exactly the members of `members`. `check`
 * enforces rules that span members; it runs on the typed value in both
 * directions.
 */
export function objectCodec<T>(what: string, members: MembersOf<T>, check?: (value: T, at: string) => void): Codec<T> {
  const table = new MemberTable(members);
  return {
    decode(json, at) {
      if (!isJsonObject(json)) throw invalidAt(at, `must be an object (${what})`);
      const into: Record<string, unknown> = {};
      table.decode(json, at, what, into);
      const value = into as T;
      check?.(value, at);
      return value;
    },
    encode(value, at) {
      const into: JsonObject = {};
      table.encode(value, at, what, into);
      check?.(value as T, at);
      return into;
    },
  };
}

export interface ArrayBounds {
  /** Fewest elements; fewer is `invalid-message`. Default 0. */
  readonly min?: number;
  /** Most elements; more is `limit-exceeded` (a count limit of decisions section 6). */
  readonly max?: number;
}

/** A codec for a JSON array whose elements all use `element`. */
export function arrayCodec<T>(
  element: Codec<T>,
  bounds: ArrayBounds = {},
  check?: (value: readonly T[], at: string) => void,
): Codec<readonly T[]> {
  const min = bounds.min ?? 0;
  const max = bounds.max ?? Number.POSITIVE_INFINITY;
  const checkLength = (length: number, at: string): void => {
    if (length < min) throw invalidAt(at, `must have at least ${min} element${min === 1 ? "" : "s"}`);
    if (length > max) throw limitAt(at, `has more than ${max} elements`);
  };
  return {
    decode(json, at) {
      if (!Array.isArray(json)) throw invalidAt(at, "must be an array");
      checkLength(json.length, at);
      const out = new Array<T>(json.length);
      for (let i = 0; i < json.length; i++) out[i] = element.decode(json[i] as JsonValue, elementPath(at, i));
      check?.(out, at);
      return out;
    },
    encode(value, at) {
      if (!Array.isArray(value)) throw invalidAt(at, "must be an array");
      checkLength(value.length, at);
      const out = new Array<JsonValue>(value.length);
      for (let i = 0; i < value.length; i++) out[i] = element.encode(value[i], elementPath(at, i));
      check?.(value as readonly T[], at);
      return out;
    },
  };
}
