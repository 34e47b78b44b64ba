/**
 * The byte charge of a value `fromJs` is building, counted while it builds
 * it. JavaScript data can reference one object at many places (a DAG), and
 * the native value made of it is a tree with a node per reference: 23 nested
 * arrays of one array twice are 8 million nodes (1.26 GB) to build. The
 * decoder that validates the result counts the charge too, but only once the
 * whole tree exists; this stops the build as soon as the charge passes the
 * limit, so the work done is bounded by the limit, not by the data's shape.
 *
 * What is counted is never more than the decoder will count for the same
 * nodes (one byte per node, four per element count, one per UTF-16 unit of
 * text, which is at most its UTF-8 length), so no value the decoder accepts
 * is refused here; the decoder still has the last word on the exact figure.
 */
import { LIMITS, type ProtocolError } from "@golem-stream/wire";
import { limitError } from "./errors.js";
import type { Location } from "./location.js";

export class BuildCharge {
  private charge = 0;

  constructor(
    private readonly location: Location,
    private readonly max: number = LIMITS.maxValueByteCharge,
  ) {}

  /** Adds `bytes`, failing as soon as the total passes the limit. */
  add(bytes: number): void {
    this.charge += bytes;
    if (this.charge > this.max) throw this.exceeded();
  }

  /** Refuses `length` elements before they are walked or copied: each costs at least one byte. */
  fits(length: number): void {
    if (length > this.max - this.charge) throw this.exceeded();
  }

  /** Starts counting again, for another walk over the same data. */
  restart(): void {
    this.charge = 0;
  }

  private exceeded(): ProtocolError {
    return limitError(this.location.path(), `the value's byte charge exceeds ${this.max}`);
  }
}
