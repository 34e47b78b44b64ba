/**
 * StoredBytesTable: charges within the bound count, a charge past it counts
 * nothing and is refused, and the store's sums replace every count (how a
 * retention sweep gives purged sessions' bytes back).
 */
import { describe, expect, it, vi } from "vitest";
import { StoredBytesTable } from "../src/admission/stored-bytes.js";
import { StoredBytesExceeded } from "../src/stored-bytes-exceeded.js";

const alice = { account: "acme", principal: "alice" };
const bob = { account: "acme", principal: "bob" };

describe("StoredBytesTable", () => {
  it("counts charges per principal up to the bound; a charge past it counts nothing and is refused", () => {
    let reached = 0;
    const table = new StoredBytesTable(10, () => reached++);
    expect(table.charge(alice, 6)).toBeUndefined();
    expect(table.charge(alice, 4)).toBeUndefined();
    const refused = table.charge(alice, 1);
    expect(refused).toBeInstanceOf(StoredBytesExceeded);
    expect(refused).toMatchObject({ code: "limit-exceeded", retryable: false, closeCode: 1002 });
    expect(table.usedBy(alice)).toBe(10);
    expect(() => table.checkRoom(alice)).toThrow(StoredBytesExceeded);
    expect(reached).toBe(2);
    // Another principal, and the same name in another account, are counted apart.
    expect(table.charge(bob, 10)).toBeUndefined();
    expect(table.usedBy({ account: "globex", principal: "alice" })).toBe(0);
    expect(() => table.checkRoom({ account: "globex", principal: "alice" })).not.toThrow();
  });

  it("reads an owner's names once however often it charges (a session charges per item)", () => {
    const table = new StoredBytesTable(1000, () => undefined);
    let reads = 0;
    const owner = {
      get account() {
        reads++;
        return "acme";
      },
      get principal() {
        reads++;
        return "alice";
      },
    };
    for (let i = 0; i < 10; i++) expect(table.charge(owner, 5)).toBeUndefined();
    expect(table.usedBy(owner)).toBe(50);
    expect(reads).toBe(2);
    // An equal owner in another object counts against the same bytes.
    expect(table.usedBy({ ...alice })).toBe(50);
    expect(table.charge({ account: "acme", principal: "alice" }, 951)).toBeInstanceOf(StoredBytesExceeded);
  });

  it("an owner object's key is made once, however often it is charged; equal owners in other objects share its count", () => {
    const table = new StoredBytesTable(1_000_000, () => undefined);
    const owner = { account: "acme", principal: 'a","b' };
    table.charge(owner, 1);
    const stringify = vi.spyOn(JSON, "stringify");
    try {
      for (let i = 0; i < 1000; i++) table.charge(owner, 1);
      expect(stringify).not.toHaveBeenCalled(); // one key per item was the cost this avoids
    } finally {
      stringify.mockRestore();
    }
    expect(table.usedBy({ ...owner })).toBe(1001);
    expect(table.usedBy({ account: 'acme","a', principal: "b" })).toBe(0);
  });

  it("giveBack counts the purged sessions' bytes less, never below zero", () => {
    const table = new StoredBytesTable(10, () => undefined);
    table.charge(alice, 10);
    table.charge(bob, 3);
    table.giveBack([
      { ...alice, bytes: 4 },
      { ...bob, bytes: 5 },
    ]);
    expect(table.usedBy(alice)).toBe(6);
    expect(table.usedBy(bob)).toBe(0);
    expect(table.charge(bob, 10)).toBeUndefined();
  });

  it("replace sets every count to the store's sums, forgetting principals the store no longer has bytes of", () => {
    const table = new StoredBytesTable(10, () => undefined);
    table.charge(alice, 10);
    table.charge(bob, 3);
    table.replace([{ ...bob, bytes: 7 }]);
    expect(table.usedBy(alice)).toBe(0);
    expect(table.usedBy(bob)).toBe(7);
    expect(() => table.checkRoom(alice)).not.toThrow();
  });
});
