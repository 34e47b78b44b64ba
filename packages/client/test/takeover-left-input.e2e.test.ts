/**
 * A takeover from saved state cancels the inputs whose sources stayed with the process that saved
 * it (`source-unavailable`); a method that then fails for it fails with the server's generic
 * words. The client says what only it knows: that it was away, and that besides a restart, an
 * input it had to cancel may be why (docs/protocol/client.md §3), as the CLI does for `resume`.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { createClient, inputStream, type Client, type ResumeState } from "../src/index.js";
import { demo, record } from "./support/demo.js";
import { TOKEN, startServerWithClient, type TestServer } from "./support/embedded.js";

let server: TestServer;
let client: Client;
beforeAll(async () => ({ server, client } = await startServerWithClient()));
afterAll(async () => server.dispose());

it("a method failed by an input the takeover had to cancel is said to be that, or a restart", async () => {
  // tally reads its input to the end: one that never ends keeps it reading.
  async function* lines(): AsyncGenerator<string> {
    yield "first";
    await new Promise<never>(() => undefined);
  }
  const call = client.invoke({ ...demo, method: "tally", methodParameters: record(inputStream.strings(lines())) });
  await new Promise<void>((resolve) => call.on("accepted", () => resolve()));
  const state = call.detach() as ResumeState;
  // Another process continues from the saved state: the input's source stayed behind.
  const other = createClient({ url: server.url, token: TOKEN }).takeover(state);
  const error = await other.finished.catch((e: unknown) => e);
  expect(error).toMatchObject({ kind: "invocation-failed", code: "invocation-failed" });
  expect((error as Error).message).toMatch(
    /^invocation failed \(the invocation failed on the server while this process was away from it, .*or an input only the process this one took over from could feed, which had to be cancelled here \(source-unavailable\)\)$/,
  );
});
