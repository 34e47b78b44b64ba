/**
 * Where `golem-stream serve` keeps its state when `--data-dir` is not given:
 * the XDG base-directory "state" location, which is meant for data that
 * should survive restarts but is not user documents or configuration.
 */
import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";

export function defaultDataDir(env: Readonly<Record<string, string | undefined>>): string {
  const stateHome = env["XDG_STATE_HOME"];
  // The XDG spec says relative values are invalid and must be ignored.
  if (stateHome !== undefined && stateHome !== "" && isAbsolute(stateHome)) return join(stateHome, "golem-stream");
  return join(env["HOME"] || homedir(), ".local", "state", "golem-stream");
}
