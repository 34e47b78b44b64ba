// A CommonJS consumer of the CLI's library entry (require() of ESM, Node >= 20.19).
const cli = require("@golem-stream/cli");

if (typeof cli.runCli !== "function") throw new Error("runCli missing");
console.log(`cjs: checkpoint v${cli.CHECKPOINT_VERSION}`);
