/**
 * The hard deadline of one check or scenario when a test runs a whole suite: three minutes instead
 * of the command's one. `pnpm test` runs every package's tests at once on this machine's two cores,
 * and the heaviest scenario (backpressure.stalled-reader, about 100 MiB in steps of 64 items) takes
 * 7-10 s alone and was seen past 60 s in such a run. The suites check behaviour, not speed.
 */
export const LOADED_CHECK_TIMEOUT_MS = 180_000;
