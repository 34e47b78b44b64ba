// An ESM consumer of the CLI's library entry: write and read back a checkpoint.
import { CHECKPOINT_VERSION, decodeCheckpoint, encodeCheckpoint, EXIT } from "@golem-stream/cli";

if (typeof encodeCheckpoint !== "function" || typeof decodeCheckpoint !== "function") throw new Error("checkpoint codec missing");
console.log(`esm: checkpoint v${CHECKPOINT_VERSION}, exit codes ${Object.keys(EXIT).length}`);
