/**
 * `golem-stream serve` reads its keyring again on SIGUSR2, as a real process:
 * after `keyring rotate` and the signal, new session tokens are signed with
 * the new key while a session signed with the old one still resumes; a file
 * that shares no key with the keyring in use is refused and changes nothing;
 * after `keyring drop` and the signal, a session signed with the dropped key
 * is refused (invalid-token), and the log says so beforehand.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { Keyring } from "@golem-stream/tokens";
import { EXIT } from "../src/exit-codes.js";
import { itemsOf, run, scratchDir, start, startServe, TOKEN, waitFor, type ServerProcess } from "./support/processes.js";
import { events, reload } from "./support/serve-reloads.js";

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

/** Starts a `count` of 30 items with a checkpoint and kills its client after a few: the checkpoint resumes it. */
async function interruptedCall(server: ServerProcess): Promise<{ checkpoint: string; before: unknown[] }> {
  const checkpoint = join(scratchDir(), "count.ckpt");
  const args = ["invoke", "echo", "count", "-c", '{"name":"k"}', "30", "40", "--checkpoint", checkpoint, "--checkpoint-interval", "0"];
  const invoked = start(args, { env: server.env });
  await waitFor(invoked, () => itemsOf(invoked.stdout(), "$").length >= 3, "three items");
  invoked.child.kill("SIGKILL");
  return { checkpoint, before: itemsOf((await invoked.done).stdout, "$") };
}

/** The key id that signed the session token a checkpoint holds. */
async function sessionKeyOf(checkpoint: string): Promise<string> {
  const { sessionToken } = JSON.parse(readFileSync(checkpoint, "utf8")) as { sessionToken: string };
  return (JSON.parse((await run(["token", "inspect", sessionToken, "--json"])).stdout.toString()) as { keyId: string }).keyId;
}

it("SIGUSR2 reads the keyring again: a rotation signs new tokens with the new key, old sessions resume, a foreign keyring is refused, a dropped key's sessions are refused", async () => {
  const dataDir = join(scratchDir(), "state");
  const keyringFile = join(dataDir, "keyring.json");
  const server = await startServe(["--port", "0", "--token", TOKEN, "--data-dir", dataDir, "--log-format", "json"], dataDir);
  const keyring = async (...args: string[]): Promise<string> => {
    const result = await run(["keyring", ...args, "--data-dir", dataDir]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(EXIT.success);
    return result.stdout.toString();
  };
  try {
    const original = (JSON.parse(await keyring("list", "--json")) as { active: string }).active;
    const resumedAfterRotation = await interruptedCall(server);
    const resumedAfterDrop = await interruptedCall(server);
    expect(await sessionKeyOf(resumedAfterRotation.checkpoint)).toBe(original);

    // The file changes, the server's keys do not until the signal.
    await keyring("rotate", "--key-id", "k-next");
    expect(await sessionKeyOf((await interruptedCall(server)).checkpoint)).toBe(original);
    expect(await reload(server, "server.reloaded", 1)).toMatchObject({
      keyring: `signing key k-next; verify-only ${original}`,
      keyringChanges: [`signing key k-next (was ${original})`],
    });
    expect(await sessionKeyOf((await interruptedCall(server)).checkpoint)).toBe("k-next");
    const resumed = await run(["resume", resumedAfterRotation.checkpoint], { env: server.env });
    expect(resumed.stderr).toBe("");
    expect(resumed.code).toBe(EXIT.success);
    expect([...new Set([...resumedAfterRotation.before, ...itemsOf(resumed.stdout, "$")])]).toEqual(range(30));

    // Another deployment's keyring: refused, the keys in use kept.
    const rotated = readFileSync(keyringFile, "utf8");
    writeFileSync(keyringFile, Keyring.generate("k-foreign").exportKeyringJson());
    expect((await reload(server, "server.reload-failed", 1))["error"]).toBe(
      `the keyring ${keyringFile} holds none of the keys in use (k-next, ${original}): every token handed out would be refused; ` +
        "change it with golem-stream keyring rotate, activate and drop",
    );
    expect(await sessionKeyOf((await interruptedCall(server)).checkpoint)).toBe("k-next");
    writeFileSync(keyringFile, rotated);

    // Dropping the old key ends the sessions it signed: said in the log, then refused.
    await keyring("drop", original);
    expect(await reload(server, "server.reloaded", 2)).toMatchObject({ keyring: "signing key k-next" });
    expect(events(server, "keyring.dropped")).toEqual([
      expect.objectContaining({
        level: "warn",
        keys: [original],
        msg: `the keyring ${keyringFile} no longer holds ${original}: tokens signed with it are refused from now on (invalid-token)`,
      }),
    ]);
    const refused = await run(["resume", resumedAfterDrop.checkpoint], { env: server.env });
    expect(refused.code, refused.stderr.toString()).toBe(EXIT.rejected);
    expect(refused.stderr.toString()).toContain("rejected (invalid-token)");
    expect(refused.stderr.toString()).toContain("only while the server's keyring holds the key that signed them");
    const secrets = (JSON.parse(rotated) as { keys: { secret: string }[] }).keys.map((key) => key.secret);
    for (const secret of secrets) expect(server.running.stderr()).not.toContain(secret);
  } finally {
    expect((await server.stop()).code).toBe(EXIT.success);
  }
}, 60_000);
