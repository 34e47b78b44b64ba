// The adapter for @golem-stream/client with one fault of client-faults.mjs:
// node faulty-client-adapter.mjs FAULT
import { runClientAdapter } from "../../dist/client/adapter/golem-stream-client.js";
import { faultyTransport } from "./client-faults.mjs";

const fault = process.argv[2] ?? "none";
await runClientAdapter({ wrapTransport: (transport) => faultyTransport(fault, transport) });
process.exit(0);
