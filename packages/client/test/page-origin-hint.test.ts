/**
 * A browser reports a failed catalogue request (and WebSocket) without a reason, so in a page the
 * message names a refused origin beside a server that is down, with the option that allows it;
 * outside a page it says nothing of origins.
 */
import { afterEach, expect, it } from "vitest";
import { fetchCatalogue } from "../src/discovery.js";

const failing = (): Promise<Response> => Promise.reject(new TypeError("Failed to fetch"));
const URL_ = "http://127.0.0.1:9/v1/agents/types?application=demo&environment=default";

afterEach(() => {
  delete (globalThis as { location?: unknown }).location;
});

it("in a page, a catalogue request the browser failed names the page's origin and --allow-origin", async () => {
  (globalThis as { location?: unknown }).location = { origin: "http://127.0.0.1:8700" };
  await expect(fetchCatalogue(URL_, "token", 1024, undefined, failing)).rejects.toMatchObject({
    kind: "connection-lost",
    message:
      `could not reach the discovery endpoint ${URL_}: Failed to fetch (a browser gives no reason: the server may be down, ` +
      "or may not allow this page's origin, http://127.0.0.1:8700: golem-stream serve --allow-origin http://127.0.0.1:8700)",
  });
});

it("outside a page, or in an opaque origin, says nothing of origins", async () => {
  await expect(fetchCatalogue(URL_, "token", 1024, undefined, failing)).rejects.toMatchObject({
    message: `could not reach the discovery endpoint ${URL_}: Failed to fetch`,
  });
  (globalThis as { location?: unknown }).location = { origin: "null" };
  await expect(fetchCatalogue(URL_, "token", 1024, undefined, failing)).rejects.toMatchObject({
    message: `could not reach the discovery endpoint ${URL_}: Failed to fetch`,
  });
});
