/**
 * @golem-stream/test-support — what the tests of several packages share, so
 * that no package's tests import another package's `test/` folder (turbo
 * would not see those files as inputs, and a change to them would leave
 * cached results standing). Private: never published.
 */
export { CHROMIUM_PATH, launchChromium } from "./chromium.js";
export { collect, fieldsOf, randomChunks, sha256, u32 } from "./demo-values.js";
