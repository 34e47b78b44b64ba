// Control for browser-types.test.ts: this project has no Node types, so this must not compile.
process.nextTick(() => Buffer.from("x"));
export {};
