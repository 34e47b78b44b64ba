/**
 * How the user types this CLI, for the commands its hints spell out (serve's banner, "resume with
 * ..."): `golem-stream` when installed globally, on the user's PATH; `npx golem-stream` when it
 * runs from a project's node_modules, which is not on the PATH of the user's own shell: run by
 * `npx golem-stream` (or `npm exec`), by a package.json script (`npm run serve`), or as
 * `node_modules/.bin/golem-stream`. In a checkout of the repository the launcher behind
 * `pnpm golem-stream` sets GOLEM_STREAM_COMMAND to that, for the same reason.
 */
export function commandName(env: Readonly<Record<string, string | undefined>>, executable?: string): string {
  const given = env["GOLEM_STREAM_COMMAND"]?.trim();
  if (given !== undefined && given !== "") return given;
  return ranByPackageManager(env) || isProjectBin(executable) ? "npx golem-stream" : "golem-stream";
}

/**
 * Whether a package manager runs this process: npm sets `npm_command=exec` and
 * `npm_lifecycle_event=npx` for `npx` and `npm exec` (one command since npm 7), and for a script
 * (`npm run serve`, pnpm's and yarn's too) `npm_lifecycle_event` to the script's name and
 * `npm_execpath` to the package manager. Either way the CLI is the project's, found in its
 * node_modules/.bin, which the manager put on the PATH of what it runs and the user's shell lacks.
 */
function ranByPackageManager(env: Readonly<Record<string, string | undefined>>): boolean {
  return env["npm_command"] === "exec" || isSet(env["npm_lifecycle_event"]) || isSet(env["npm_execpath"]);
}

/**
 * Whether the executable was started by its path in a project's `node_modules/.bin` (the link npm
 * makes there, run by that path or by a PATH that holds the folder). A global install links it
 * elsewhere (`/usr/local/bin/golem-stream`); Node keeps the path it was given, not the link's target.
 */
function isProjectBin(executable: string | undefined): boolean {
  return executable !== undefined && /(^|[\\/])node_modules[\\/]\.bin[\\/]/.test(executable);
}

function isSet(value: string | undefined): boolean {
  return value !== undefined && value !== "";
}

/**
 * `text` (help, usage) with every command line's `golem-stream` spelled as typed here: a word of
 * its own followed by its arguments (`$ golem-stream types`, `| golem-stream invoke`, "Usage:
 * golem-stream [options]"), never a path, a package name, a longer name that contains it, or an
 * option's value (`--jwt-audience golem-stream`).
 */
export function spellCommands(text: string, command: string): string {
  if (command === "golem-stream") return text;
  return text.replace(/(?<=^|[\s|`(])(?<!--[\w-]+ )golem-stream(?= )/gm, command);
}
