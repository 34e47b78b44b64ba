/**
 * Claims of orphaned sessions whose COMMIT got no answer (the connection cut, PostgreSQL
 * restarted): such a claim may have committed, and then the sessions it took are this node's at
 * their next epoch while nothing runs them; no later claim returns them, since they are this
 * node's now. So the claim is remembered with what it took, and asked about at the next claim.
 *
 * How a claim is known to have committed: like a group of writes (`lost-commit.ts`), each claim
 * that takes sessions sets a commit marker of its own in its transaction (a row of
 * `writer_groups` under a random key, new for every claim) and learns its transaction's id.
 * Once that transaction is no longer in progress, the marker's row says whether it committed.
 * Why a key per claim: one key for every claim would make a later claim's marker answer for an
 * earlier one that did not commit, and a claim still in progress would then hold up the next.
 *
 * What the marker does not tell by itself: that each session is still this node's at that epoch.
 * A session another node claimed since (this node's lease lapsed meanwhile), or that a second
 * process with this node id moved to a later epoch (`reclaim`), is not returned. Why not the
 * sessions' owner and epoch alone: a second process with this node id can have claimed the same
 * session at the same epoch after this claim failed, and its run must not be doubled.
 */
import type pg from "pg";
import { CommitMarker } from "./lost-commit.js";

/** A session a claim took, at the epoch the claim gave it. */
export interface ClaimedSession {
  readonly sessionId: string;
  readonly epoch: string;
}

/** A claim in its transaction, marked: what it took, and how to ask about it afterwards. */
export interface MarkedClaim {
  readonly marker: CommitMarker;
  readonly xid: string;
  readonly claimed: readonly ClaimedSession[];
}

/** Every claim's marker is the first (and only) group of its own key. */
const CLAIM_GROUP = 1;

export class LostClaims {
  /** The schema-qualified `writer_groups`. */
  readonly #markers: string;
  /** Selects which of the given sessions (`$1`, their epochs `$2`) node `$3` still owns, running, at those epochs. */
  readonly #stillOwned: string;
  readonly #lost: MarkedClaim[] = [];
  /**
   * Sessions of claims found committed and not yet handed to a caller: kept until a claim round
   * returns them (`takeFound`), so a round that fails after settling (PostgreSQL gone again
   * before its own claim) does not drop them, their claims' markers already deleted.
   */
  readonly #found = new Set<string>();

  constructor(markers: string, stillOwned: string) {
    this.#markers = markers;
    this.#stillOwned = stillOwned;
  }

  /** How many claims wait for their verdict. */
  get waiting(): number {
    return this.#lost.length;
  }

  /** The sessions of the claims `settle` found committed, handed over once: the caller returns them. */
  takeFound(): string[] {
    const found = [...this.#found];
    this.#found.clear();
    return found;
  }

  /** Sets a new marker for the claim of `claimed`, inside the claim's transaction on `client`. */
  async mark(client: pg.ClientBase, claimed: readonly ClaimedSession[]): Promise<MarkedClaim> {
    const marker = new CommitMarker(this.#markers);
    const { rows } = await client.query<{ xid: string }>(marker.statement(client, CLAIM_GROUP));
    const xid = rows[0]?.xid;
    if (xid === undefined) throw new Error("the claim's commit marker did not answer its transaction's id");
    return { marker, xid, claimed };
  }

  /** The claim's COMMIT went out (or may have) and got no answer. */
  lost(claim: MarkedClaim): void {
    this.#lost.push(claim);
  }

  /** The claim committed: its marker is no longer needed (best effort; a row left is swept a day later). */
  async committed(client: pg.ClientBase, claim: MarkedClaim): Promise<void> {
    await claim.marker.forget(client);
  }

  /**
   * Asks about every lost claim: the sessions of those that committed which node `nodeId` still
   * owns at the claimed epoch, running, are kept for `takeFound`. A claim whose transaction is
   * still in progress (the old connection not yet seen gone by the server) is asked about again
   * next time. Throws, keeping every claim not yet answered, when PostgreSQL cannot be asked.
   */
  async settle(client: pg.ClientBase, nodeId: string): Promise<void> {
    for (const claim of [...this.#lost]) {
      const verdict = await claim.marker.committed(client, claim.xid, CLAIM_GROUP);
      if (verdict === "pending") continue;
      if (verdict === "committed") {
        const { rows } = await client.query<{ session_id: string }>(this.#stillOwned, [
          claim.claimed.map((c) => c.sessionId),
          claim.claimed.map((c) => c.epoch),
          nodeId,
        ]);
        for (const row of rows) this.#found.add(row.session_id);
        await claim.marker.forget(client);
      }
      this.#lost.splice(this.#lost.indexOf(claim), 1);
    }
  }
}
