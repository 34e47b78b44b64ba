#!/usr/bin/env node
/**
 * The public API of every published package, as a committed report: one
 * `packages/<package>/api/<entry>.api.md` per entry point of its `exports`,
 * written by API Extractor from the built declarations. A change to a public
 * surface is then a visible diff in review, and CI fails when a report is out
 * of date.
 *
 *   pnpm build && node scripts/api-report.mjs           # check (CI): exit 1 on any difference
 *   pnpm build && node scripts/api-report.mjs --update  # rewrite the reports after a change
 *
 * It reads only declarations (`dist/**.d.ts`), so run it after a build. Only
 * the report is produced: no rolled-up `.d.ts`, no doc model. Messages about
 * undocumented or untagged exports are off; what this guards is the surface,
 * not its comments.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Extractor, ExtractorConfig } from "@microsoft/api-extractor";

const root = join(fileURLToPath(import.meta.url), "..", "..");
const update = process.argv.includes("--update");

/** Each published package's entry points that have declarations: [subpath, types file]. */
function entryPoints(manifest) {
  const entries = [];
  for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
    if (typeof target !== "object" || target === null) continue;
    const types = target.types ?? target.import?.types;
    if (typeof types === "string") entries.push([subpath, types]);
  }
  return entries;
}

/** `.` → `index`, `./client-adapter` → `client-adapter`, `./a/b` → `a-b`. */
function reportName(subpath) {
  return subpath === "." ? "index" : subpath.replace(/^\.\//, "").replaceAll("/", "-");
}

let stale = 0;
let failed = 0;
let checked = 0;
for (const folder of readdirSync(join(root, "packages")).sort()) {
  const packageFolder = join(root, "packages", folder);
  const manifestPath = join(packageFolder, "package.json");
  if (!existsSync(manifestPath)) continue;
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
  if (manifest.private === true) continue;
  const reportFolder = join(packageFolder, "api");
  mkdirSync(reportFolder, { recursive: true });
  for (const [subpath, types] of entryPoints(manifest)) {
    const typesPath = join(packageFolder, types);
    if (!existsSync(typesPath)) {
      console.error(`${manifest.name}${subpath.slice(1)}: ${types} is missing; run pnpm build first`);
      failed += 1;
      continue;
    }
    const name = reportName(subpath);
    const config = ExtractorConfig.prepare({
      configObject: {
        projectFolder: packageFolder,
        mainEntryPointFilePath: typesPath,
        // Not the package's tsconfig: its program holds the sources, and the compiler would then take
        // the built declarations for its own outputs and read the sources instead.
        compiler: {
          overrideTsconfig: {
            compilerOptions: {
              strict: true,
              target: "es2022",
              module: "nodenext",
              moduleResolution: "nodenext",
              lib: ["es2023", "dom"],
              types: ["node"],
              skipLibCheck: true,
            },
            files: [typesPath],
          },
        },
        apiReport: {
          enabled: true,
          reportFileName: `${name}.api.md`,
          reportFolder,
          reportTempFolder: join(packageFolder, "node_modules", ".api-report"),
        },
        docModel: { enabled: false },
        dtsRollup: { enabled: false },
        tsdocMetadata: { enabled: false },
        messages: {
          compilerMessageReporting: { default: { logLevel: "warning" } },
          extractorMessageReporting: {
            default: { logLevel: "none" },
            "ae-wrong-input-file-type": { logLevel: "error" },
          },
          tsdocMessageReporting: { default: { logLevel: "none" } },
        },
      },
      configObjectFullPath: join(packageFolder, "api-extractor.json"),
      packageJsonFullPath: manifestPath,
    });
    const result = Extractor.invoke(config, {
      localBuild: update,
      showVerboseMessages: false,
      messageCallback: (message) => {
        // This script says in one line per entry point what differs and what to run; API
        // Extractor's own notices (its compiler, where it copied a report) would repeat it.
        if (typeof message.messageId === "string" && message.messageId.startsWith("console-")) {
          message.handled = true;
        }
      },
    });
    checked += 1;
    if (result.apiReportChanged && !update) {
      stale += 1;
      console.error(`${manifest.name}${subpath.slice(1)}: the public API differs from api/${name}.api.md`);
    } else if (!result.succeeded) {
      failed += 1;
      console.error(`${manifest.name}${subpath.slice(1)}: API Extractor failed (${result.errorCount} errors)`);
    }
  }
}
if (stale > 0) {
  console.error(
    `api-report: ${stale} report(s) out of date. If the change is meant, run \`node scripts/api-report.mjs --update\` and commit the reports.`,
  );
}
if (stale > 0 || failed > 0) process.exit(1);
console.log(`api-report: ${checked} entry points, every report matches`);
