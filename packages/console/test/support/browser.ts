/**
 * Debian's Chromium driven by playwright-core: the client's browser tests'
 * launcher, shared (one place for its flags and its failure message). When
 * no browser can be started, `launchBrowser` throws with the reason and the
 * fix: the tests fail, they are never skipped.
 */
export { CHROMIUM_PATH, launchChromium as launchBrowser } from "@golem-stream/test-support";
