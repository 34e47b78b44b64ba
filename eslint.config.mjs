/**
 * ESLint with typescript-eslint's type-aware rules: only rules the codebase
 * keeps, each with the reason it is here. No formatting rules: Prettier
 * formats (`pnpm format`). `pnpm lint` runs both; docs/architecture.md says
 * what each checks.
 */
import tseslint from "typescript-eslint";

export default tseslint.config(
  {
    ignores: [
      "**/dist/**",
      "**/node_modules/**",
      "**/coverage/**",
      "**/*.d.ts",
      // A user's browser project, compiled by its own test with its own settings.
      "packages/client/test/browser-project/**",
    ],
  },
  {
    files: ["packages/*/src/**/*.ts", "packages/*/test/**/*.ts"],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: {
        project: ["packages/*/tsconfig.lint.json", "packages/console/tsconfig.web.json"],
        tsconfigRootDir: import.meta.dirname,
      },
    },
    plugins: { "@typescript-eslint": tseslint.plugin },
    // Some directives name core rules this config leaves off (no-control-regex): not stale, just unused here.
    linterOptions: { reportUnusedDisableDirectives: "off" },
    rules: {
      // A promise nobody awaits or handles loses its rejection: say `void` where that is meant.
      // An invocation's cancel() never rejects (its outcome is a value): calling it and going on is fine.
      "@typescript-eslint/no-floating-promises": [
        "error",
        {
          allowForKnownSafeCalls: [
            { from: "file", name: "cancel", path: "packages/client/src/invocation.ts" },
            { from: "package", name: "cancel", package: "@golem-stream/client" },
          ],
        },
      ],
      // Awaiting a value that is not a promise hides a mistake (a sync call thought async, or a
      // promise lost inside an object).
      "@typescript-eslint/await-thenable": "error",
      // An async function where a void callback is expected drops its rejection as surely as a
      // floating promise does (event handlers, forEach, timers).
      "@typescript-eslint/no-misused-promises": "error",
    },
  },
  {
    files: ["packages/*/src/**/*.ts"],
    rules: {
      // No `any` in what ships: `unknown` and a check, or the real type.
      "@typescript-eslint/no-explicit-any": "error",
    },
  },
);
