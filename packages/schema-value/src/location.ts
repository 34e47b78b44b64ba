/**
 * Where the decoder is inside a value. One mutable stack of segments is
 * shared by the whole walk so that the happy path allocates no strings: the
 * structural error path and the JSON pointer are only rendered on demand
 * (an error, or a stream leaf).
 *
 * A segment is a payload member name (`fields`, `payload`, ...) optionally
 * followed by indexes: `["fields", 0]` renders as `.fields[0]` in an error
 * path and as `/value/fields/0` in a JSON pointer.
 */
export class Location {
  private readonly segments: (string | number)[] = [];

  constructor(private readonly prefix: string) {}

  /** Current depth in value nodes, used to bound recursion. */
  depth = 0;

  /** Enters a child node; returns the segment count to hand back to `leave`. */
  enter(member: string, index?: number, subIndex?: number): number {
    this.segments.push(member);
    if (index === undefined) return this.entered(1);
    this.segments.push(index);
    if (subIndex === undefined) return this.entered(2);
    this.segments.push(subIndex);
    return this.entered(3);
  }

  leave(segmentCount: number): void {
    this.segments.length -= segmentCount;
    this.depth--;
  }

  private entered(segmentCount: number): number {
    this.depth++;
    return segmentCount;
  }

  /** The structural path for error messages, e.g. `params.fields[0].elements[3]`. */
  path(): string {
    let out = this.prefix;
    for (const segment of this.segments) {
      out += typeof segment === "number" ? `[${segment}]` : `.${segment}`;
    }
    return out;
  }

  /** RFC 6901 pointer into the value JSON, e.g. `/value/fields/0` ("" is the root). */
  pointer(): string {
    let out = "";
    for (const segment of this.segments) {
      // Member names used here never contain "~" or "/", so no escaping is needed.
      out += typeof segment === "number" ? `/${segment}` : `/value/${segment}`;
    }
    return out;
  }
}
