// The adapter for @golem-stream/client with one fault of client-faults.mjs:
// node faulty-client-adapter.mjs FAULT
import { runClientAdapter } from "../../dist/client/adapter/golem-stream-client.js";
import { faultyAdapterOptions } from "./client-faults.mjs";

await runClientAdapter(faultyAdapterOptions(process.argv[2] ?? "none"));
process.exit(0);
