/** The server messages the transport tests send are messages of the protocol: the wire's strict decoder reads them back as they were made. */
import { expect, it } from "vitest";
import { decodeServerMessage, encodeServerMessage } from "@golem-stream/wire";
import { stringOutputItem } from "../src/index.js";

it("stringOutputItem is an outputStreamItem the strict decoder reads back unchanged", () => {
  const item = stringOutputItem(7, "text é");
  expect(item).toMatchObject({ type: "outputStreamItem", channel: 2, sequence: 7n, value: { kind: "string", value: "text é" } });
  expect(decodeServerMessage(encodeServerMessage(item), false)).toEqual(item);
});
