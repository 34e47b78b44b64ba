/**
 * How the user types this CLI, for the commands its hints spell out (serve's banner, "resume with
 * ..."): `golem-stream` when installed; in a checkout of the repository the launcher behind
 * `pnpm golem-stream` sets GOLEM_STREAM_COMMAND to that, since a bare `golem-stream` is not on the
 * PATH there.
 */
export function commandName(env: Readonly<Record<string, string | undefined>>): string {
  const given = env["GOLEM_STREAM_COMMAND"]?.trim();
  return given === undefined || given === "" ? "golem-stream" : given;
}

/**
 * `text` (help, usage) with every command line's `golem-stream` spelled as typed here: a word of
 * its own followed by its arguments (`$ golem-stream types`, `| golem-stream invoke`, "Usage:
 * golem-stream [options]"), never a path, a package name or a longer name that contains it.
 */
export function spellCommands(text: string, command: string): string {
  if (command === "golem-stream") return text;
  return text.replace(/(?<=^|[\s|`(])golem-stream(?= )/gm, command);
}
