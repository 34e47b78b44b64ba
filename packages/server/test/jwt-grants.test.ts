/** The grants of an authorization claim and what each covers (src/auth/jwt-grants.ts). */
import { describe, expect, it } from "vitest";
import { grantCovers, grantsOf } from "../src/auth/jwt-grants.js";
import type { AuthorizationRequest } from "../src/index.js";

const caller = { account: "a", principal: "p" };
const start: AuthorizationRequest = {
  caller,
  operation: "start",
  application: "shop",
  environment: "prod",
  agentType: "cart",
  agentIdentity: "00",
  method: "add",
};
const discover: AuthorizationRequest = { caller, operation: "discover", application: "shop", environment: "prod" };
const covers = (claim: unknown, request: AuthorizationRequest, prefix = "") =>
  grantsOf(claim, prefix).some((grant) => grantCovers(grant, request));

describe("grants", () => {
  it("reads a space-separated scope or an array of strings; anything else grants nothing", () => {
    expect(grantsOf("openid shop/prod  *", "")).toEqual([["openid"], ["shop", "prod"], ["*"]]);
    expect(grantsOf(["shop", 7, null, "x/y"], "")).toEqual([["shop"], ["x", "y"]]);
    expect(grantsOf({ shop: true }, "")).toEqual([]);
    expect(grantsOf(undefined, "")).toEqual([]);
  });

  it("skips entries without the prefix, empty segments and more than four segments", () => {
    expect(grantsOf("stream:shop openid stream: stream:a//b stream:a/b/c/d/e stream:a/b/c/d", "stream:")).toEqual([
      ["shop"],
      ["a", "b", "c", "d"],
    ]);
  });

  it("a grant covers what its segments name; * is any name; a shorter grant covers everything below", () => {
    expect(covers("shop", start)).toBe(true);
    expect(covers("shop/prod/cart/add", start)).toBe(true);
    expect(covers("*/*/cart", start)).toBe(true);
    expect(covers("shop/staging", start)).toBe(false);
    expect(covers("shop/prod/cart/remove", start)).toBe(false);
    expect(covers("Shop", start)).toBe(false);
  });

  it("discovery of an environment is covered by any grant inside it", () => {
    expect(covers("shop/prod/cart/add", discover)).toBe(true);
    expect(covers("shop/staging/cart", discover)).toBe(false);
  });
});
