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
