/**
 * Which transports are handed the runtime's `CheckedInputItem` (whose value
 * is only text until read) and which a plain message: this package's own
 * encode the item's checked text as it is, and must never pay to parse it;
 * a transport of the application's own gets ordinary objects.
 */
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import WsWebSocket from "ws";
import {
  createClient,
  inputStream,
  webSocketTransport,
  wsTransport,
  type ClientMessage,
  type Transport,
  type WebSocketLike,
} from "../src/index.js";
import { CheckedInputItem } from "../src/item-encoding.js";
import { collect, demo, firstStream, record } from "./support/demo.js";
import { startServer, TOKEN } from "./support/embedded.js";

let server: Awaited<ReturnType<typeof startServer>>;
beforeAll(async () => void (server = await startServer()));
afterAll(async () => server.dispose());

const words = Array.from({ length: 50 }, (_, i) => `word ${i}`);

async function reverseThrough(transport: Transport): Promise<string[]> {
  const client = createClient({ url: server.url, token: TOKEN, transport });
  const call = client.invoke({ ...demo, method: "reverse", methodParameters: record(inputStream.strings(words)) });
  const values = (await collect((await firstStream(call)).values())).map((item) => item.value as string);
  await call.finished;
  return values;
}

const expected = words.map((word) => [...word].reverse().join(""));

it("wsTransport and webSocketTransport are handed the checked items and never parse them back", async () => {
  const plain = vi.spyOn(CheckedInputItem.prototype, "value", "get");
  try {
    expect(await reverseThrough(wsTransport())).toEqual(expected);
    const whatwg = webSocketTransport({
      open: (url, protocol, token) =>
        new WsWebSocket(url, protocol, { headers: { Authorization: `Bearer ${token}` } }) as unknown as WebSocketLike,
    });
    expect(await reverseThrough(whatwg)).toEqual(expected);
    expect(plain).not.toHaveBeenCalled();
  } finally {
    plain.mockRestore();
  }
});

it("a transport of one's own sees every input item as a plain message it can spread", async () => {
  const inner = wsTransport();
  const seen: ClientMessage[] = [];
  const own: Transport = {
    async connect(request, handlers) {
      const connection = await inner.connect(request, handlers);
      return {
        ...connection,
        send: (message: ClientMessage) => {
          seen.push({ ...message });
          connection.send(message);
        },
      };
    },
  };
  expect(await reverseThrough(own)).toEqual(expected);
  const items = seen.filter((message) => message.type === "inputStreamItem");
  expect(items.map((message) => (message as { value: { value: string } }).value.value)).toEqual(words);
  expect(items.some((message) => message instanceof CheckedInputItem)).toBe(false);
});
