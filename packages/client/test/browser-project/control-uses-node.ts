// Control for browser-types.e2e.test.ts: this project has no Node types, so this must not compile.
process.nextTick(() => Buffer.from("x"));
export {};
