/**
 * How the user types this CLI, for the commands its hints spell out (serve's banner, "resume with
 * ..."): `golem-stream` when installed; run by `npx golem-stream` (or `npm exec`), which finds it
 * in the project's node_modules/.bin, `npx golem-stream`, since a bare `golem-stream` is not on the
 * user's PATH; in a checkout of the repository the launcher behind `pnpm golem-stream` sets
 * GOLEM_STREAM_COMMAND to that, for the same reason.
 */
export function commandName(env: Readonly<Record<string, string | undefined>>): string {
  const given = env["GOLEM_STREAM_COMMAND"]?.trim();
  if (given !== undefined && given !== "") return given;
  return ranByNpx(env) ? "npx golem-stream" : "golem-stream";
}

/**
 * Whether npm runs this process for `npx` or `npm exec` (one command since npm 7): npm sets
 * `npm_command=exec` and `npm_lifecycle_event=npx` in the environment of what it runs (`npm run`
 * sets `npm_command=run` and the script's name).
 */
function ranByNpx(env: Readonly<Record<string, string | undefined>>): boolean {
  return env["npm_command"] === "exec" || env["npm_lifecycle_event"] === "npx";
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
