/**
 * The canonical form of an f32 (docs/protocol/schema-value.md): the shortest
 * decimal that rounds to the same f32, the closest of those, and of two
 * equally close the one with an even last digit, as ryu (serde_json) writes
 * an f32. Golden cases, and a property over random bit patterns checked
 * against an exact search written here in bigint arithmetic (not the
 * package's method).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeSchemaGraph, decodeSchemaValue, encodeSchemaValue, t } from "../src/index.js";
import { canonicalF32 } from "../src/scalars.js";

const f32Graph = decodeSchemaGraph(t.graph(t.f32()));

function fromBits(bits: number): number {
  return new Float32Array(new Uint32Array([bits]).buffer)[0] as number;
}

/**
 * The decimal with the fewest significant digits that rounds to the positive
 * finite f32 with these bits; of several, the closest; of two equally close,
 * the one with an even last digit. Exact: the f32 is m x 2^e, and the reals
 * that round to it lie within half a gap either side (the gap below a power
 * of two is half the gap above), ends included when m is even (ties go to
 * even). Returns the digits and the power of ten of the last one.
 */
function shortestClosest(bits: number): { digits: bigint; exponent: number } {
  const biased = (bits >>> 23) & 0xff;
  const fraction = bits & 0x7fffff;
  const m = BigInt(biased === 0 ? fraction : fraction | 0x800000);
  const q = (biased === 0 ? 1 : biased) - 150 - 2; // the bounds below are integers times 2^q
  const x = 4n * m;
  const lo = x - (biased > 1 && fraction === 0 ? 1n : 2n);
  const hi = x + 2n;
  const inclusive = m % 2n === 0n;
  // From the largest power of ten down, the first that has a multiple inside the interval gives the fewest digits.
  for (let k = 39; k >= -46; k--) {
    // Scaled by 2^a x 10^b, the value, the bounds and a step of 10^k are all integers.
    const a = BigInt(Math.max(0, -q));
    const b = BigInt(Math.max(0, -k));
    const scale = (v: bigint) => v * 2n ** (BigInt(q) + a) * 10n ** b;
    const step = 10n ** (BigInt(k) + b) * 2n ** a;
    const [X, L, H] = [scale(x), scale(lo), scale(hi)];
    let low = (L + step - 1n) / step;
    if (!inclusive && low * step === L) low++;
    let high = H / step;
    if (!inclusive && high * step === H) high--;
    if (low > high) continue;
    const distance = (d: bigint) => (d * step > X ? d * step - X : X - d * step);
    let best = low;
    for (let d = low + 1n; d <= high; d++) {
      if (distance(d) < distance(best) || (distance(d) === distance(best) && d % 2n === 0n)) best = d;
    }
    return { digits: best, exponent: k };
  }
  throw new Error(`no decimal found for bits ${bits}`);
}

describe("f32 canonical form", () => {
  it.each([
    // Powers of two whose nearest 8-digit decimal lies just outside the f32's rounding interval.
    [2 ** -96, "1.2621775e-29"],
    [2 ** 87, "1.5474251e+26"],
    [2 ** 90, "1.2379401e+27"],
    [-(2 ** 90), "-1.2379401e+27"],
    [0.1, "0.1"],
    [0.10000000149011612, "0.1"],
    [16777217, "16777216"],
    // Halfway between two shortest decimals: the one with an even last digit.
    [2097152.25, "2097152.2"],
    [2097152.75, "2097152.8"],
    [2 ** -12, "0.00024414062"],
    [2 ** -149, "1e-45"],
    [2 ** -126, "1.1754944e-38"],
    [3.4028234663852886e38, "3.4028235e+38"],
  ])("f32 %s is written %s", (input, text) => {
    expect(encodeSchemaValue(decodeSchemaValue({ kind: "f32", value: input }, f32Graph).value)).toBe(`{"kind":"f32","value":${text}}`);
    expect(canonicalF32(Number(text))).toBe(Number(text));
  });

  it("is the shortest decimal that rounds to the f32, the closest of those, and of two the even one", () => {
    const anyFinite = fc.integer({ min: 1, max: 0x7f7fffff });
    const powerOfTwo = fc.integer({ min: 0, max: 254 }).map((biased) => (biased === 0 ? 1 : biased << 23));
    // Between 2^21 and 2^22 an f32 is a multiple of 0.25, so every odd multiple lies halfway between two 8-digit decimals.
    const halfway = fc.integer({ min: 0, max: 0x7fffff }).map((fraction) => (148 << 23) | fraction);
    fc.assert(
      fc.property(fc.oneof(anyFinite, powerOfTwo, halfway), fc.boolean(), (bits, negative) => {
        const single = fromBits(bits);
        const canonical = canonicalF32(negative ? -single : single) as number;
        expect(Math.fround(canonical)).toBe(negative ? -single : single);
        const { digits, exponent } = shortestClosest(bits);
        const expected = Number(`${digits}e${exponent}`);
        expect(canonical).toBe(negative ? -expected : expected);
      }),
      { numRuns: 3000 },
    );
  });
});
