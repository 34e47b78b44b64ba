/**
 * What `open()` says when PostgreSQL refuses its role a privilege (SQLSTATE
 * 42501): which grant is missing, as a statement an operator can run,
 * instead of PostgreSQL's bare `permission denied for database …`.
 *
 * A node's role needs CONNECT on the database (PUBLIC has it unless it was
 * revoked), and either to own the schema (it then creates and upgrades the
 * tables: CREATE on the database, or a schema created for it), or, where a
 * node of the owner's role has created them, USAGE on the schema and SELECT,
 * INSERT, UPDATE and DELETE on its tables (README, *Privileges*).
 */
import type pg from "pg";

export const INSUFFICIENT_PRIVILEGE = "42501";

/** Who the migration runs as, and where. */
export interface Grantee {
  readonly role: string;
  readonly database: string;
}

/**
 * The role and database `client` is connected as and to, and whether `schema` and its
 * `schema_migrations` exist, from the catalogues (which need no privilege on the schema).
 */
export async function existing(client: pg.ClientBase, schema: string): Promise<Grantee & { schema: boolean; migrations: boolean }> {
  const { rows } = await client.query<Grantee & { schema: boolean; migrations: boolean }>(
    `SELECT current_user AS role, current_database() AS database,
      EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1) AS schema,
      EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND c.relname = 'schema_migrations') AS migrations`,
    [schema],
  );
  return rows[0]!;
}

/**
 * `error` with the grant to connect, when PostgreSQL refused `who` the database as it connected: a
 * role without CONNECT there (revoked from PUBLIC, and not granted to the role); else as it is.
 */
export function connectRefused(error: unknown, who: Grantee): unknown {
  if (!isInsufficientPrivilege(error)) return error;
  const { role, database } = quoted(who);
  return refused(
    `the role ${who.role} cannot connect to database ${who.database}, lacking CONNECT on it: GRANT CONNECT ON DATABASE ${database} TO ${role}`,
    error,
  );
}

/** `error` with the missing grant said, when it is a privilege refused while creating `schema`; else as it is. */
export function createSchemaRefused(error: unknown, schema: string, who: Grantee): unknown {
  if (!isInsufficientPrivilege(error)) return error;
  const { role, database } = quoted(who);
  return refused(
    `the role ${who.role} cannot create schema ${schema} in database ${who.database}: ` +
      `GRANT CREATE ON DATABASE ${database} TO ${role}, or create the schema for it (CREATE SCHEMA ${schema} AUTHORIZATION ${role})`,
    error,
  );
}

/**
 * `error` as said when a migration of `schema` is refused a privilege: whatever PostgreSQL names
 * (`must be owner of table …`, `permission denied for schema …`), the grants a role that uses the
 * tables has are not what applies a migration; the tables' owner is.
 */
export function upgradeRefused(error: unknown, schema: string, who: Grantee): unknown {
  if (!isInsufficientPrivilege(error)) return error;
  const { role } = quoted(who);
  return refused(
    `the role ${who.role} cannot apply the migrations of schema ${schema} (${(error as Error).message}): open it once as the role ` +
      `that owns the schema, which applies them, then start the others; or make this role its owner (ALTER SCHEMA ${schema} OWNER TO ${role})`,
    error,
  );
}

/** `error` with the grants a node's role needs in `schema`, when it is a privilege refused there; else as it is. */
export function schemaRefused(error: unknown, schema: string, who: Grantee): unknown {
  if (!isInsufficientPrivilege(error)) return error;
  const reason = (error as Error).message;
  const { role } = quoted(who);
  if (/must be owner/.test(reason)) return upgradeRefused(error, schema, who);
  return refused(
    `the role ${who.role} lacks a privilege in schema ${schema} (${reason}): a node's role owns the schema, or has ` +
      `GRANT USAGE ON SCHEMA ${schema} TO ${role}; GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${schema} TO ${role}`,
    error,
  );
}

/** PostgreSQL's refusal (not one of ours, which says the grant already). */
function isInsufficientPrivilege(error: unknown): boolean {
  return error instanceof Error && !(error instanceof PrivilegeRefused) && (error as { code?: unknown }).code === INSUFFICIENT_PRIVILEGE;
}

/** A privilege refused, with the grant it takes; PostgreSQL's SQLSTATE `code` kept, its error the cause. */
class PrivilegeRefused extends Error {
  readonly code = INSUFFICIENT_PRIVILEGE;
}

function refused(message: string, cause: unknown): Error {
  return new PrivilegeRefused(message, { cause });
}

/** The names as a GRANT statement takes them: quoted when they are not plain lower-case identifiers. */
function quoted(who: Grantee): Grantee {
  const quote = (name: string) => (/^[a-z_][a-z0-9_]*$/.test(name) ? name : `"${name.replace(/"/g, '""')}"`);
  return { role: quote(who.role), database: quote(who.database) };
}
