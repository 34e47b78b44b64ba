/**
 * Type-checks a consumer in-process with the workspace's TypeScript. The
 * declaration files every consumer shares (TypeScript's libs, @types/node)
 * are parsed once and reused by every program: eight tsc processes, each
 * parsing them again, took most of this check's time on two cores.
 */
import { readdirSync } from "node:fs";
import path from "node:path";
import ts from "typescript";

const shared = new Map<string, ts.SourceFile>();
const isShared = (file: string) =>
  file.includes(`${path.sep}typescript${path.sep}lib${path.sep}`) || file.includes(`${path.sep}@types${path.sep}node${path.sep}`);

/** A compiler host that caches the shared declaration files across programs. */
export function cachingHost(options: ts.CompilerOptions): ts.CompilerHost {
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (file, languageVersionOrOptions, ...rest) => {
    if (!isShared(file)) return getSourceFile(file, languageVersionOrOptions, ...rest);
    const settings =
      typeof languageVersionOrOptions === "object" ? languageVersionOrOptions : { languageVersion: languageVersionOrOptions };
    const key = `${file}\0${settings.languageVersion}\0${settings.impliedNodeFormat ?? ""}`;
    let source = shared.get(key);
    if (source === undefined) {
      source = getSourceFile(file, languageVersionOrOptions, ...rest);
      if (source !== undefined) shared.set(key, source);
    }
    return source;
  };
  return host;
}

/** The diagnostics of type-checking `extensions` files of `dir` with `json` compiler options (tsconfig form), formatted. */
export function typeCheck(dir: string, json: Record<string, unknown>, extensions: readonly string[]): string {
  const { options, errors } = ts.convertCompilerOptionsFromJson(json, dir);
  if (errors.length > 0) return ts.formatDiagnostics(errors, formatHost(dir));
  const files = readdirSync(dir)
    .filter((file) => extensions.some((extension) => file.endsWith(extension)) && !file.endsWith(".d.ts"))
    .map((file) => path.join(dir, file));
  const program = ts.createProgram(files, options, cachingHost(options));
  return ts.formatDiagnostics(ts.getPreEmitDiagnostics(program), formatHost(dir));
}

function formatHost(dir: string): ts.FormatDiagnosticsHost {
  return { getCanonicalFileName: (file) => file, getCurrentDirectory: () => dir, getNewLine: () => "\n" };
}
