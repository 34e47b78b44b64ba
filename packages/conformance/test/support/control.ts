/** A loopback HTTP endpoint whose GET /restart restarts the server under test: what `--restart-cmd` calls. */
import { createServer } from "node:http";

export interface RestartControl {
  /** A shell command for `--restart-cmd`. */
  readonly command: string;
  close(): Promise<void>;
}

export async function startRestartControl(restart: () => Promise<void>): Promise<RestartControl> {
  const server = createServer((req, res) => {
    if (req.url !== "/restart") return void res.writeHead(404).end();
    restart().then(
      () => res.writeHead(200).end("restarted"),
      (error: unknown) => res.writeHead(500).end(String(error)),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  const url = `http://127.0.0.1:${address.port}/restart`;
  return {
    command: `${JSON.stringify(process.execPath)} -e "fetch('${url}').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
