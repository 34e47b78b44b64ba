import { expect, it } from "vitest";
import { isPlainHttpOnTlsRefusal, PLAIN_HTTP_ON_TLS_CODE } from "../src/internal.js";

it("a 400 protocol-error answering an http:// or ws:// URL is a TLS port's refusal of plain HTTP; nothing else is", () => {
  expect(PLAIN_HTTP_ON_TLS_CODE).toBe("protocol-error");
  expect(isPlainHttpOnTlsRefusal("ws://127.0.0.1:8080/v1/agents/invoke-agent-session", 400, "protocol-error")).toBe(true);
  expect(isPlainHttpOnTlsRefusal(new URL("http://localhost:8080/v1/agents/types"), 400, "protocol-error")).toBe(true);
  // Over TLS, another status or code, no envelope, or no URL at all: some other refusal.
  expect(isPlainHttpOnTlsRefusal("wss://127.0.0.1:8080/", 400, "protocol-error")).toBe(false);
  expect(isPlainHttpOnTlsRefusal("https://127.0.0.1:8080/", 400, "protocol-error")).toBe(false);
  expect(isPlainHttpOnTlsRefusal("ws://127.0.0.1:8080/", 400, "invalid-message")).toBe(false);
  expect(isPlainHttpOnTlsRefusal("ws://127.0.0.1:8080/", 426, "protocol-error")).toBe(false);
  expect(isPlainHttpOnTlsRefusal("ws://127.0.0.1:8080/", 400, undefined)).toBe(false);
  expect(isPlainHttpOnTlsRefusal("not a url", 400, "protocol-error")).toBe(false);
});
