/**
 * OutputBudget's hysteresis: paused at the limit, resumed only at half of it,
 * so a consumer catching up does not pause and resume the socket per item.
 */
import { describe, expect, it } from "vitest";
import { OutputBudget } from "../src/output-budget.js";

class Queue {
  queuedEntries = 0;
}

describe("OutputBudget", () => {
  it("pauses when a stream reaches its entries, resumes when it is back to half of them", () => {
    const changes: boolean[] = [];
    const budget = new OutputBudget<Queue>(8, 1 << 20, (paused) => changes.push(paused));
    const stream = new Queue();
    const add = (): void => {
      stream.queuedEntries++;
      budget.changed(stream, 1);
    };
    const take = (): void => {
      stream.queuedEntries--;
      budget.changed(stream, -1);
    };
    for (let i = 0; i < 8; i++) add();
    expect(changes).toEqual([true]);
    for (let i = 0; i < 3; i++) take(); // 5 left: still paused
    expect(budget.paused).toBe(true);
    take(); // 4 = half
    expect(changes).toEqual([true, false]);
    // Not paused again until the limit itself.
    for (let i = 0; i < 3; i++) add();
    expect(budget.paused).toBe(false);
    add();
    expect(changes).toEqual([true, false, true]);
  });

  it("pauses when the session reaches its bytes, resumes at half of them", () => {
    const changes: boolean[] = [];
    const budget = new OutputBudget<Queue>(256, 1000, (paused) => changes.push(paused));
    const a = new Queue();
    const b = new Queue();
    a.queuedEntries = 1;
    budget.changed(a, 600);
    b.queuedEntries = 1;
    budget.changed(b, 400);
    expect(changes).toEqual([true]);
    a.queuedEntries = 0;
    budget.changed(a, -300); // 700 held
    expect(budget.paused).toBe(true);
    budget.changed(a, -200); // 500 held: half
    expect(changes).toEqual([true, false]);
  });

  it("stays paused while any one stream is over half, though another drained", () => {
    const budget = new OutputBudget<Queue>(4, 1 << 20, () => undefined);
    const a = new Queue();
    const b = new Queue();
    a.queuedEntries = 4;
    budget.changed(a, 4);
    b.queuedEntries = 4;
    budget.changed(b, 4);
    a.queuedEntries = 0;
    budget.changed(a, -4);
    expect(budget.paused).toBe(true);
    b.queuedEntries = 2;
    budget.changed(b, -2);
    expect(budget.paused).toBe(false);
  });
});
