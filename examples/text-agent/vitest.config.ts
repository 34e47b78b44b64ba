import { defineConfig } from "vitest/config";
import { checked, unitAndE2e } from "../../vitest.shared.js";

/**
 * Two projects, as in every package of the workspace (vitest.shared.ts): `unit` (the text
 * processing, in memory) and `e2e` (`*.e2e.test.ts`: the real `serve --agents` process, the
 * client script and the CLI).
 */
export default defineConfig({
  test: {
    ...checked(),
    projects: unitAndE2e(),
  },
});
