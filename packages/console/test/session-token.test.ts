/** The bearer token lives in this tab's sessionStorage only, never in localStorage. */
import { beforeEach, expect, it } from "vitest";
import { forgetToken, readToken, saveToken } from "../src/web/session-token.js";

beforeEach(() => {
  sessionStorage.clear();
  localStorage.clear();
});

it("saves, reads back and forgets the token in sessionStorage only", () => {
  expect(readToken()).toBeUndefined();
  saveToken("secret");
  expect(readToken()).toBe("secret");
  expect(sessionStorage.length).toBe(1);
  expect(localStorage.length).toBe(0);
  forgetToken();
  expect(readToken()).toBeUndefined();
  expect(sessionStorage.length).toBe(0);
});
