/**
 * What a node's role needs, and what `open()` says when it lacks it: the grant to run, not
 * PostgreSQL's bare `permission denied`. A schema created for the role is enough without CREATE
 * on the database.
 */
import { randomBytes } from "node:crypto";
import { afterAll, expect, it } from "vitest";
import { PostgresSessionStore } from "../src/index.js";
import { cleanUp, connect, freshSchema, pgUrl, withAdmin } from "./support/stores.js";

afterAll(cleanUp);

/** Runs `work` with the URL of a new login role that has no privilege beyond PUBLIC's, after `setUp(role)`; drops it afterwards. */
async function asNewRole(
  setUp: (role: string) => string,
  work: (url: string, role: string, database: string) => Promise<void>,
): Promise<void> {
  const role = `r_${freshSchema()}`;
  await withAdmin(async (client) => {
    const database = (await client.query<{ db: string }>("SELECT current_database() AS db")).rows[0]!.db;
    await client.query(`CREATE ROLE ${role} LOGIN PASSWORD 'pw'; ${setUp(role)}`);
    try {
      const url = new URL(pgUrl());
      url.username = role;
      url.password = "pw";
      await work(url.toString(), role, database);
    } finally {
      await client.query(`DROP OWNED BY ${role}; DROP ROLE ${role}`);
    }
  });
}

async function opening(url: string, schema: string): Promise<void> {
  const store = new PostgresSessionStore({ connectionString: url, schema });
  try {
    await store.open();
  } finally {
    await store.close();
  }
}

it("a role that may not create the schema is told the grant, or to have the schema created for it", async () => {
  const schema = freshSchema();
  await asNewRole(
    () => "",
    async (url, role, database) => {
      await expect(opening(url, schema)).rejects.toThrow(
        `the role ${role} cannot create schema ${schema} in database ${database}: GRANT CREATE ON DATABASE ${database} TO ${role}, ` +
          `or create the schema for it (CREATE SCHEMA ${schema} AUTHORIZATION ${role})`,
      );
    },
  );
});

it("a schema created for the role is enough, without CREATE on the database", async () => {
  const schema = freshSchema();
  await asNewRole(
    (role) => `CREATE SCHEMA ${schema} AUTHORIZATION ${role}`,
    async (url) => {
      await expect(opening(url, schema)).resolves.toBeUndefined();
    },
  );
});

it("a role without privileges on another role's tables is told the grants", async () => {
  const schema = freshSchema();
  await (await connect({ schema })).close();
  await asNewRole(
    () => "",
    async (url, role) => {
      await expect(opening(url, schema)).rejects.toThrow(
        new RegExp(
          `the role ${role} lacks a privilege in schema ${schema} \\(permission denied for schema ${schema}\\): .*` +
            `GRANT USAGE ON SCHEMA ${schema} TO ${role}; GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${schema} TO ${role}`,
        ),
      );
    },
  );
});

it("a role that does not own the tables opens with USAGE on the schema and the data privileges on its tables", async () => {
  const schema = freshSchema();
  await (await connect({ schema })).close();
  await asNewRole(
    (role) =>
      `GRANT USAGE ON SCHEMA ${schema} TO ${role}; GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${schema} TO ${role}`,
    async (url) => {
      await expect(opening(url, schema)).resolves.toBeUndefined();
    },
  );
});

it("a role that does not own the tables, meeting a migration, is told to open the schema once as its owner", async () => {
  const schema = freshSchema();
  await (await connect({ schema })).close();
  // The schema as a release before the commit markers left it: its last migration not applied.
  await withAdmin((client) =>
    client.query(`DROP TABLE ${schema}.writer_groups; DELETE FROM ${schema}.schema_migrations WHERE version = 5`),
  );
  await asNewRole(
    (role) =>
      `GRANT USAGE ON SCHEMA ${schema} TO ${role}; GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${schema} TO ${role}`,
    async (url, role) => {
      await expect(opening(url, schema)).rejects.toThrow(
        new RegExp(
          `the role ${role} cannot apply the migrations of schema ${schema} \\(permission denied for schema ${schema}\\): ` +
            `open it once as the role that owns the schema`,
        ),
      );
    },
  );
});

it("a role without CONNECT on the database is told the grant", async () => {
  // A database of the test's own: PUBLIC's CONNECT revoked on the shared one would refuse the other files' roles.
  const database = `d_${randomBytes(6).toString("hex")}`;
  await withAdmin((client) => client.query(`CREATE DATABASE ${database}`));
  try {
    await asNewRole(
      () => `REVOKE CONNECT ON DATABASE ${database} FROM PUBLIC`,
      async (url, role) => {
        const target = new URL(url);
        target.pathname = `/${database}`;
        const failure = await opening(target.toString(), freshSchema()).then(
          () => undefined,
          (error: unknown) => error,
        );
        expect(failure).toMatchObject({
          message: `the role ${role} cannot connect to database ${database}, lacking CONNECT on it: GRANT CONNECT ON DATABASE ${database} TO ${role}`,
          code: "42501",
          cause: { code: "42501" },
        });
      },
    );
  } finally {
    await withAdmin((client) => client.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`));
  }
});
