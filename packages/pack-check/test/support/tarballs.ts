/**
 * Packs every publishable package of the workspace with `pnpm pack` (which
 * turns `workspace:` ranges into versions, as publishing does) into one
 * directory, and reads what a tarball holds.
 */
import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { gunzipSync } from "node:zlib";

const run = promisify(execFile);

export const workspaceRoot = path.resolve(import.meta.dirname, "../../../..");

export interface Tarball {
  readonly name: string;
  readonly directory: string;
  readonly file: string;
  readonly version: string;
}

/** The workspace's publishable packages (every package under packages/ that is not private). */
export function publishablePackages(): { name: string; directory: string; version: string }[] {
  const packagesDir = path.join(workspaceRoot, "packages");
  return readdirSync(packagesDir)
    .map((entry) => path.join(packagesDir, entry))
    .map((directory) => ({
      directory,
      manifest: JSON.parse(readFileSync(path.join(directory, "package.json"), "utf8")) as Record<string, unknown>,
    }))
    .filter(({ manifest }) => manifest["private"] !== true)
    .map(({ directory, manifest }) => ({ name: String(manifest["name"]), directory, version: String(manifest["version"]) }));
}

export async function packAll(destination: string): Promise<Tarball[]> {
  return Promise.all(
    publishablePackages().map(async ({ name, directory, version }) => {
      const { stdout } = await run("pnpm", ["pack", "--pack-destination", destination], { cwd: directory });
      const file = stdout.trim().split("\n").at(-1) ?? "";
      if (!file.endsWith(".tgz")) throw new Error(`pnpm pack in ${directory} printed no tarball: ${stdout}`);
      return { name, directory, version, file: path.resolve(destination, file) };
    }),
  );
}

/** The files of a .tgz, by path inside the package (without the leading `package/`). */
export function tarballFiles(file: string): Map<string, Buffer> {
  const tar = gunzipSync(readFileSync(file));
  const files = new Map<string, Buffer>();
  let offset = 0;
  while (offset + 512 <= tar.length) {
    const header = tar.subarray(offset, offset + 512);
    if (header.every((byte) => byte === 0)) break;
    const field = (start: number, length: number) =>
      header
        .subarray(start, start + length)
        .toString("utf8")
        .replace(/\0.*$/s, "");
    const name = `${field(345, 155) === "" ? "" : `${field(345, 155)}/`}${field(0, 100)}`;
    const size = Number.parseInt(field(124, 12).trim() || "0", 8);
    const type = field(156, 1);
    if (type === "0" || type === "") files.set(name.replace(/^package\//, ""), tar.subarray(offset + 512, offset + 512 + size));
    offset += 512 + Math.ceil(size / 512) * 512;
  }
  return files;
}
