/**
 * Every input stream of one session, by the three names it goes by: the
 * caller's binding, the provisional reference it was sent under, and the
 * stream token the server gave it. It hands out provisional references for
 * starts and resolves the server's input mappings to feeders.
 */
import type { JsonValue, SchemaValueJson, StreamMapping } from "@golem-stream/wire";
import { isPlainStringNode } from "@golem-stream/wire/internal";
import { violation } from "./errors.js";
import { InputFeeder, type FeederHost } from "./input-feeder.js";
import type { InputStream, ParamNode } from "./input-stream.js";
import { bindProvisionalRefs, findProvisionalRefs } from "./values.js";
import { randomUUID } from "./uuid.js";

/**
 * Where mappings came from. Only an acceptance may list an input this
 * process has no source for; only the acceptance of a resume or takeover
 * may name one by a provisional reference another process sent.
 */
export type MappingSource = "ack-or-output" | "start-acceptance" | "attach-acceptance";

export interface InputRegistryOptions {
  readonly maxUnackedInputBytes: number;
  /** A source threw; its feeder already told the server `source-unavailable`. */
  onSourceFailure(input: InputStream, error: unknown): void;
  /** The server durably accepted more of some input (reconnect-policy progress). */
  onAcknowledged(): void;
}

/** What an input mapping resolves to: this process's feeder, or a stream whose source is elsewhere. */
export type ResolvedInput = { readonly kind: "feeder"; readonly feeder: InputFeeder } | { readonly kind: "sourceless" };

export class InputRegistry {
  readonly #options: InputRegistryOptions;
  readonly #byBinding = new Map<InputStream, InputFeeder>();
  readonly #byRef = new Map<string, InputFeeder>();
  readonly #byToken = new Map<string, InputFeeder>();
  /** Bindings of the first start and their references, until their sources are claimed. */
  readonly #unclaimed = new Map<InputStream, string>();
  /**
   * Provisional references of a start frozen by another process: their
   * sources stayed behind, so the inputs they resolve to are cancelled.
   */
  #orphanRefs = new Set<string>();

  constructor(options: InputRegistryOptions) {
    this.#options = options;
  }

  get size(): number {
    return this.#byBinding.size;
  }

  feeders(): IterableIterator<InputFeeder> {
    return this.#byBinding.values();
  }

  /**
   * The method parameters of a new start attempt: every binding becomes a
   * provisional reference, fresh for every attempt (protocol 3.2). Sources
   * are not claimed yet, so a start that fails to encode consumes nothing.
   */
  bindStart(params: ParamNode): SchemaValueJson {
    for (const feeder of this.#byBinding.values()) {
      this.#byRef.delete(feeder.provisionalRef);
      feeder.provisionalRef = randomUUID();
      this.#byRef.set(feeder.provisionalRef, feeder);
    }
    return bindProvisionalRefs(params, (binding) => {
      const feeder = this.#byBinding.get(binding);
      if (feeder !== undefined) return feeder.provisionalRef;
      let ref = this.#unclaimed.get(binding);
      if (ref === undefined) this.#unclaimed.set(binding, (ref = randomUUID()));
      return ref;
    });
  }

  /** Claims the sources of the first start: after it validated, so a refused invoke() consumes nothing. */
  claimStartSources(): void {
    for (const [binding, ref] of this.#unclaimed) this.feederFor(binding, ref);
    this.#unclaimed.clear();
  }

  /** The provisional references of a start frozen by another process, whose sources are not here. */
  adoptSourcelessStart(methodParameters: SchemaValueJson): void {
    this.#orphanRefs = new Set(findProvisionalRefs(methodParameters as unknown as JsonValue));
  }

  /** The feeder of a binding, created (with its provisional reference) on first use. */
  feederFor(binding: InputStream, provisionalRef: string = randomUUID()): InputFeeder {
    const known = this.#byBinding.get(binding);
    if (known !== undefined) return known;
    const host: FeederHost = {
      freezeValue: (owner, item) => {
        const encode = owner.encode ?? ((value: unknown) => value as ParamNode);
        const node = encode(item);
        // The feeder encodes an item at once and keeps only its text, so an item that can hold no
        // binding (every item of a stream<string>) needs no copy.
        if (isPlainStringNode(node)) return node;
        return bindProvisionalRefs(node, (nested) => this.feederFor(nested).provisionalRef);
      },
      onSourceFailure: (input, error) => this.#options.onSourceFailure(input, error),
      onAcknowledged: () => this.#options.onAcknowledged(),
    };
    const feeder = new InputFeeder(binding, provisionalRef, host, this.#options.maxUnackedInputBytes);
    this.#byBinding.set(binding, feeder);
    this.#byRef.set(feeder.provisionalRef, feeder);
    return feeder;
  }

  /**
   * Resolves an input mapping. A stream token this client does not know
   * belongs to a source that is not in this process (a session taken over
   * from another one) — legal only in an acceptance, where the server lists
   * every input. A provisional reference must be one this client sent (or
   * one of the frozen start it continues), except in the acceptance of a
   * resume or takeover: there the server names a nested input that another
   * process introduced but never used by that process's provisional
   * reference, so that its introducer could find it after losing the ACK
   * (docs/protocol/server.md); here its source is gone.
   */
  resolve(mapping: StreamMapping, source: MappingSource): ResolvedInput {
    let feeder: InputFeeder | undefined;
    if (mapping.provisionalRef !== undefined) {
      feeder = this.#byRef.get(mapping.provisionalRef);
      if (feeder === undefined && source !== "attach-acceptance" && !this.#orphanRefs.has(mapping.provisionalRef)) {
        throw violation("mapping resolves a provisional reference this client never sent");
      }
    } else {
      feeder = this.#byToken.get(mapping.streamToken);
    }
    if (feeder === undefined) {
      if (source === "ack-or-output") throw violation("an input mapping for an unknown stream");
      return { kind: "sourceless" };
    }
    feeder.streamToken = mapping.streamToken;
    this.#byToken.set(mapping.streamToken, feeder);
    return { kind: "feeder", feeder };
  }
}
