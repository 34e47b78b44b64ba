/**
 * @golem-stream/test-support — what the tests of several packages share (a
 * headless Chromium, demo-call values, server messages of transport tests, a TCP proxy that breaks the network on
 * purpose, a hand-written WebSocket upgrade request, a throwaway TLS certificate authority), so
 * that no package's tests import another package's `test/` folder (turbo
 * would not see those files as inputs, and a change to them would leave
 * cached results standing). Private: never published.
 */
export { CHROMIUM_PATH, launchChromium } from "./chromium.js";
export { collect, fieldsOf, randomChunks, sha256, u32 } from "./demo-values.js";
export { stringOutputItem } from "./server-messages.js";
export {
  startSilentListener,
  startTcpProxy,
  type ConnectionInfo,
  type ConnectionPlan,
  type ProxiedConnection,
  type Side,
  type TcpProxy,
  type TcpProxyOptions,
  type Upstream,
} from "./tcp-proxy.js";
export { makeTestCertificates, servedCertificateName, type TestCertificates } from "./tls-certificates.js";
export { upgradeRequest } from "./upgrade-request.js";
