// Type-checked under nodenext and bundler: what someone writing scenarios or an adapter host uses.
import {
  CLIENT_SECTIONS,
  clientScenarios,
  runClientSuite,
  runServerSuite,
  formatTextReport,
  type AdapterCommand,
  type AdapterEvent,
  type ClientSuiteReport,
  type Scenario,
  type SuiteReport,
} from "@golem-stream/conformance";
import { runClientAdapter, type ClientAdapterOptions } from "@golem-stream/conformance/client-adapter";

export const sections: readonly string[] = CLIENT_SECTIONS;
export const ids: string[] = clientScenarios().map((scenario: Scenario) => scenario.id);
export const read: AdapterCommand = { type: "read", stream: 0, count: 1, digest: true };
export const ready = (event: AdapterEvent): boolean => event.type === "ready";
export async function clientSuite(adapter: string): Promise<ClientSuiteReport> {
  return runClientSuite({ adapter, only: ["outputs"] });
}
export async function serverSuite(url: string): Promise<string> {
  const report: SuiteReport = await runServerSuite({ url, token: "s3cret", only: ["handshake"] });
  return formatTextReport(report);
}
export const hosted: (options: ClientAdapterOptions) => Promise<void> = runClientAdapter;
