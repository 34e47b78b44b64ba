/**
 * Reading a JSON-logging `serve`'s stderr for its events, and sending it
 * SIGUSR2 until the reload's outcome is logged: what the reload tests share.
 */
import { waitFor, type ServerProcess } from "./processes.js";

/** The log lines of `event` serve wrote so far. */
export function events(server: ServerProcess, event: string): Record<string, unknown>[] {
  return server.running
    .stderr()
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((record) => record["event"] === event);
}

/** Sends SIGUSR2 and waits for its outcome's log line: the `count`th of `event`. */
export async function reload(
  server: ServerProcess,
  event: "server.reloaded" | "server.reload-failed",
  count: number,
): Promise<Record<string, unknown>> {
  server.running.child.kill("SIGUSR2");
  await waitFor(server.running, () => events(server, event).length >= count, `${event} number ${count}`);
  return events(server, event)[count - 1]!;
}
