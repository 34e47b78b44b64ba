/**
 * This node's part in the cluster (docs/cluster.md): its lease (heartbeat,
 * leave), the sessions it claims from nodes whose lease lapsed, who owns a
 * session at which epoch, the catalogue fingerprints of the live nodes, and
 * whether every live node reads packed log rows (so this one may write them).
 *
 * The lease statements are tried once, never held through an outage: a
 * heartbeat that fails must be seen as one.
 */
import { randomUUID } from "node:crypto";
import type pg from "pg";
import type { HeartbeatReport, NodeCatalogue, Ownership } from "@golem-stream/server/store";
import type { CheckedOut, Connections } from "./connections.js";
import { LostClaims, type MarkedClaim } from "./lost-claims.js";
import type { Statements } from "./statements.js";
import { asStoreError } from "./store-error.js";
import { LOG_FORMAT } from "./store-options.js";

/**
 * A node's row whose lease lapsed this long ago (one day) is deleted at a store's open, unless the
 * node still owns a running session: a process that crashed (or was killed) never leaves, and with
 * the default node id (`<hostname>-<random>`, new for every process) each such process left its
 * row for good, read by every live-node query of every heartbeat. Deleting a row changes no
 * claim (a node without a row has no live lease either); the day keeps a recently gone node in
 * view for whoever looks at the table, and a row that still owns sessions names who ran them
 * until they are claimed.
 */
export const GONE_NODE_SECONDS = 86_400;

export class Membership {
  readonly #nodeId: string;
  readonly #sql: Statements;
  readonly #connections: Connections;
  readonly #checkOpen: () => void;
  /** Whether no live node of an earlier version could read a packed row: checked at open and at each heartbeat. */
  #packing = false;
  /** This process, as `nodes.incarnation` names it. */
  readonly #incarnation = randomUUID();
  /** This store has renewed the lease before (what a heartbeat reports is about later ones). */
  #beaten = false;
  /** Claims whose COMMIT got no answer, asked about at the next claim. */
  readonly #lostClaims: LostClaims;
  /** False once the database has no `nodes.incarnation` (schema.ts: a role that cannot add it). */
  #incarnations = true;
  /** The catalogue fingerprint this node recorded, written again by each heartbeat. */
  #catalogue: string | undefined;

  constructor(nodeId: string, sql: Statements, connections: Connections, checkOpen: () => void, markers: string) {
    this.#nodeId = nodeId;
    this.#lostClaims = new LostClaims(markers, sql.claimedStillOwned);
    this.#sql = sql;
    this.#connections = connections;
    this.#checkOpen = checkOpen;
  }

  /** Whether the writer may pack small appends into shared rows now. */
  get packing(): boolean {
    return this.#packing;
  }

  async ownerOf(sessionId: string): Promise<string | undefined> {
    const [row] = await this.#connections.read<{ owner_node: string | null }>(this.#sql.ownerOf, [sessionId]);
    return row?.owner_node ?? undefined;
  }

  async ownership(sessionId: string): Promise<Ownership | undefined> {
    const [row] = await this.#connections.read<{ owner_node: string | null; owner_epoch: string }>(this.#sql.ownership, [sessionId]);
    return row?.owner_node == null ? undefined : { nodeId: row.owner_node, epoch: BigInt(row.owner_epoch) };
  }

  async heartbeat(ttlMs: number): Promise<HeartbeatReport> {
    if (!Number.isFinite(ttlMs) || ttlMs <= 0) throw new RangeError(`heartbeat ttlMs must be a positive number, got ${ttlMs}`);
    const previous = await this.#renew(ttlMs);
    this.#checkOpen();
    await this.checkPacking(this.#connections.pool);
    const otherProcess = this.#beaten && previous !== undefined && previous !== this.#incarnation;
    this.#beaten = true;
    return { otherProcess };
  }

  /** Renews the lease; the incarnation that renewed it before, when the database records them. */
  async #renew(ttlMs: number): Promise<string | undefined> {
    if (this.#incarnations) {
      try {
        const [row] = await this.#connections.readOnce<{ previous: string | null }>(this.#sql.heartbeatAs, [
          this.#nodeId,
          ttlMs,
          LOG_FORMAT,
          this.#incarnation,
          this.#catalogue ?? null,
        ]);
        return row?.previous ?? undefined;
      } catch (error) {
        if (!isUndefinedColumn(error)) throw error;
        this.#incarnations = false;
      }
    }
    await this.#connections.readOnce(this.#sql.heartbeat, [this.#nodeId, ttlMs, LOG_FORMAT]);
    return undefined;
  }

  /**
   * Packs rows only while no live node has an earlier log format: a node
   * of version 1 would read a packed row as one chunk. A node that cannot
   * read them can no longer start once the schema is at version 2 (it
   * refuses a newer schema), so only those already running count, and
   * packing starts once the last of them has left or lost its lease.
   */
  async checkPacking(db: pg.Pool | pg.PoolClient): Promise<void> {
    try {
      const { rows } = await db.query<{ packing: boolean }>(this.#sql.everyNodePacks, [LOG_FORMAT]);
      this.#packing = rows[0]?.packing === true;
    } catch (error) {
      throw asStoreError(error);
    }
  }

  /**
   * Claims every running session whose owner has no live lease, this node's own lease live
   * (`PostgresSessionStore.claimOrphans` says why), moving them and their streams to the next
   * ownership epoch in one transaction; one whose rows another transaction holds (a stalled
   * former owner's write) is left for a later claim instead of holding up the others. Returns
   * with them the sessions of an earlier claim whose COMMIT got no answer and that committed
   * (`lost-claims.ts`): nothing else would ever run them.
   */
  async claimOrphans(): Promise<string[]> {
    if (this.#lostClaims.waiting > 0) await this.#settleLostClaims();
    const claimed = await this.#claim();
    // Taken only once this round cannot fail any more: a failed round leaves them for the next.
    const lost = this.#lostClaims.takeFound();
    return lost.length === 0 ? claimed : [...new Set([...lost, ...claimed])];
  }

  async #claim(): Promise<string[]> {
    // One transaction: the sessions move to their next epoch, and their streams with them
    // (fencing: an owner's append checks the epoch on the stream row it updates). The streams
    // are read by a statement of their own, after the sessions are locked: a stream another
    // transaction created meanwhile has committed by then (it locks its session first).
    let marked: MarkedClaim | undefined;
    const ids = await this.#inTransaction(
      async (client) => {
        const { rows } = await client.query<{ session_id: string; owner_epoch: string }>(this.#sql.claimOrphans, [this.#nodeId]);
        if (rows.length === 0) return [];
        const ids = rows.map((row) => row.session_id);
        await client.query(this.#sql.claimStreams, [ids, rows.map((row) => row.owner_epoch)]);
        marked = await this.#lostClaims.mark(
          client,
          rows.map((row) => ({ sessionId: row.session_id, epoch: row.owner_epoch })),
        );
        return ids;
      },
      () => {
        if (marked !== undefined) this.#lostClaims.lost(marked);
      },
    );
    if (marked !== undefined) await this.#forgetMarker(marked);
    return ids;
  }

  /** Finds the sessions of earlier claims whose COMMIT got no answer that committed and are still this node's. */
  async #settleLostClaims(): Promise<void> {
    const checkedOut = await this.#checkOut();
    let failure: unknown;
    try {
      await this.#lostClaims.settle(checkedOut.connection, this.#nodeId);
    } catch (error) {
      failure = error;
      throw asStoreError(error);
    } finally {
      checkedOut.release(failure instanceof Error ? failure : undefined);
    }
  }

  /** A committed claim's marker, deleted (best effort: a row left is swept a day later). */
  async #forgetMarker(claim: MarkedClaim): Promise<void> {
    const checkedOut = await this.#checkOut().catch(() => undefined);
    if (checkedOut === undefined) return;
    await this.#lostClaims.committed(checkedOut.connection, claim);
    checkedOut.release();
  }

  async #checkOut(): Promise<CheckedOut> {
    this.#checkOpen();
    return this.#connections.checkOut().catch((error: unknown) => {
      throw asStoreError(error);
    });
  }

  /**
   * `work` in one transaction on a connection of its own, committed when it resolves, rolled back
   * when it throws. `commitUnanswered`: told when the COMMIT went out and failed, its answer lost
   * or an error, so the transaction may have committed.
   */
  async #inTransaction<T>(work: (client: pg.PoolClient) => Promise<T>, commitUnanswered?: () => void): Promise<T> {
    const checkedOut = await this.#checkOut();
    const client = checkedOut.connection;
    let failure: unknown;
    let committing = false;
    try {
      await client.query("BEGIN");
      const answer = await work(client);
      committing = true;
      await client.query("COMMIT");
      return answer;
    } catch (error) {
      failure = error;
      if (committing) commitUnanswered?.();
      await client.query("ROLLBACK").catch(() => undefined);
      throw asStoreError(error);
    } finally {
      checkedOut.release(failure instanceof Error ? failure : undefined);
    }
  }

  /**
   * Moves a running session this node owns to its next epoch, with its streams, in one
   * transaction (`ClusterSessionStore.reclaim`); undefined when it is not running or not this
   * node's.
   */
  async reclaim(sessionId: string): Promise<bigint | undefined> {
    return this.#inTransaction(async (client) => {
      const { rows } = await client.query<{ owner_epoch: string }>(this.#sql.reclaim, [sessionId, this.#nodeId]);
      const epoch = rows[0]?.owner_epoch;
      if (epoch === undefined) return undefined;
      await client.query(this.#sql.claimStreams, [[sessionId], [epoch]]);
      return BigInt(epoch);
    });
  }

  /** Deletes the rows of nodes gone for `GONE_NODE_SECONDS` that own no running session. */
  async sweepGoneNodes(db: pg.Pool | pg.PoolClient): Promise<void> {
    try {
      await db.query(this.#sql.sweepGoneNodes, [GONE_NODE_SECONDS]);
    } catch (error) {
      throw asStoreError(error);
    }
  }

  async leave(): Promise<void> {
    await this.#connections.readOnce(this.#sql.leave, [this.#nodeId]);
  }

  async setCatalogue(fingerprint: string): Promise<void> {
    this.#catalogue = fingerprint;
    await this.#connections.readOnce(this.#sql.setCatalogue, [this.#nodeId, fingerprint]);
  }

  async liveCatalogues(): Promise<readonly NodeCatalogue[]> {
    const rows = await this.#connections.readOnce<{ node_id: string; catalogue: string | null }>(this.#sql.liveCatalogues, [this.#nodeId]);
    return rows.map((row) => ({ nodeId: row.node_id, fingerprint: row.catalogue ?? undefined }));
  }
}

/** SQLSTATE 42703, wrapped by the store's error or not. */
function isUndefinedColumn(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const { code, cause } = error as { code?: unknown; cause?: { code?: unknown } | null };
  return code === UNDEFINED_COLUMN || cause?.code === UNDEFINED_COLUMN;
}

const UNDEFINED_COLUMN = "42703";
