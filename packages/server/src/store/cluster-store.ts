/**
 * What a `SessionStore` shared by several server processes adds (cluster
 * mode, docs/cluster.md): which node owns a session's invocation, node
 * leases, and a feed of committed changes so that the node serving a
 * client's attachment learns promptly what the owner committed, and the
 * owner learns what the attachment's node committed or was told.
 *
 * Contract, beyond `SessionStore`'s:
 * - `createSession` records `nodeId` as the new session's owner.
 * - Every committed write publishes its change to the session's
 *   subscribers on every node (including this one), after its commit and
 *   in commit order: `attach` → `attached`, `acceptInput`/`endInput` →
 *   `input`, `appendOutput` → `output`, `setResult` → `result`, `finish` →
 *   `finished`. A subscriber that receives a change reads the store for the
 *   details; changes carry no payload and may be coalesced.
 * - Ownership epochs (ownership.ts): `createSession` records epoch 1, each
 *   claim moves the session to the next epoch, and an owner's write with
 *   an epoch that is no longer the session's is refused (`OwnershipLostError`),
 *   atomically with the claim: a write either commits before the claim
 *   (and the claimer sees it) or is refused.
 * - `publish` sends a change that is not a write (a client's cancel, an
 *   attachment's delivery progress) to the session's subscribers on every
 *   node; it is not durable: a node that is down misses it.
 */
import type { ClientCancelReason } from "@golem-stream/wire";
import type { SessionStore } from "./session-store.js";

export type SessionChange =
  /** An output event of `streamId` was committed. */
  | { readonly kind: "output"; readonly streamId: string }
  /** An input chunk or terminal of `streamId` was committed. */
  | { readonly kind: "input"; readonly streamId: string }
  | { readonly kind: "result" }
  | { readonly kind: "finished" }
  /**
   * A resume or takeover committed this attachment generation (decimal), or
   * (with `attachment`) an exact replay made that attachment the sole owner
   * of the generation: every other transport of the session is revoked.
   */
  | { readonly kind: "attached"; readonly generation: string; readonly attachment?: string }
  /** A client cancelled an output stream at the node serving its attachment. */
  | { readonly kind: "cancel"; readonly streamId: string; readonly reason: ClientCancelReason }
  /** The attachment sent `events` more output events of the stream, `bytes` of payload: the owner's window moves. */
  | { readonly kind: "delivered"; readonly streamId: string; readonly events: number; readonly bytes: number }
  /** The owner's agent has taken the input items below `sequence` (decimal): the attachment may accept more. */
  | { readonly kind: "consumed"; readonly streamId: string; readonly sequence: string }
  /**
   * A node other than the owner serves an attachment to the session, still: sent while it does,
   * every quarter of `limits.detachedSessionTimeoutMs`, so the owner does not give the session up.
   */
  | { readonly kind: "alive" }
  /**
   * Dispatched by the store itself, never published: its feed's connection
   * dropped and came back, so changes of any kind may have been lost (the
   * store then also replays what a write could have sent). The owner stops
   * waiting for delivery progress it may have missed (docs/cluster.md,
   * *Store outages*).
   */
  | { readonly kind: "resync" };

export type SessionChangeListener = (change: SessionChange) => void;

/** A live node and the fingerprint of the catalogue it serves (`catalogueFingerprint`). */
export interface NodeCatalogue {
  readonly nodeId: string;
  /** Undefined when the node recorded none: a host of its own, or a node of an earlier version. */
  readonly fingerprint: string | undefined;
}

/** Which node owns a session's invocation, and at which ownership epoch. */
export interface Ownership {
  readonly nodeId: string;
  readonly epoch: bigint;
}

/** What a heartbeat found (`ClusterSessionStore.heartbeat`). */
export interface HeartbeatReport {
  /**
   * Another process kept this node id's lease since this store's previous heartbeat: two
   * processes run with one node id (a configuration mistake), or this one was frozen and a
   * process started with its id meanwhile. Never true at a store's first heartbeat, whose
   * former process may simply have died with its lease live.
   */
  readonly otherProcess: boolean;
}

export interface ClusterSessionStore extends SessionStore {
  /** This node's id, recorded as the owner of the sessions it creates. */
  readonly nodeId: string;
  /** The node that owns (runs) the session's invocation, if the session exists. */
  ownerOf(sessionId: string): Promise<string | undefined>;
  /** The session's owner and its ownership epoch, read together, if the session exists. */
  ownership(sessionId: string): Promise<Ownership | undefined>;
  /**
   * Extends this node's lease to `ttlMs` from now by the database's clock. A store that can tell
   * whether another process heartbeats with its node id says so (`HeartbeatReport`); one that
   * cannot resolves to nothing.
   */
  heartbeat(ttlMs: number): Promise<HeartbeatReport | void>;
  /**
   * Makes this node the owner of every running session whose owner's lease
   * has expired (or that has no live owner), atomically, so exactly one
   * node claims each, each at its next ownership epoch; returns their ids.
   * The claimer then reads its epoch (`ownership`) and finishes them as a
   * restart does. A claim that failed with its outcome unknown (its commit's
   * answer lost) must not leave what it took unreturned: a store returns
   * those sessions from a later call once it knows the claim committed, and
   * while they are still this node's at that epoch.
   */
  claimOrphans(): Promise<string[]>;
  /**
   * Moves a running session this node owns to its next ownership epoch, as a
   * claim does (with its streams, atomically), and returns the new epoch;
   * undefined, changing nothing, when the session is not running or another
   * node owns it. A node that starts recovers its own sessions through it: a
   * former process of the same node id that is still alive (frozen, then
   * continued; or started twice) holds the epoch before, so its writes to them
   * are refused from then on, as a claimed owner's are.
   */
  reclaim(sessionId: string): Promise<bigint | undefined>;
  /** Drops this node's lease (a drained node leaving). */
  leave(): Promise<void>;
  subscribe(sessionId: string, listener: SessionChangeListener): () => void;
  publish(sessionId: string, change: SessionChange): Promise<void>;
  /**
   * Records the fingerprint of the catalogue this node serves, beside its
   * lease (after `heartbeat`). Optional, with `liveCatalogues`: a store
   * without them leaves out the cluster's catalogue check.
   */
  setCatalogue?(fingerprint: string): Promise<void>;
  /** Every node other than this one whose lease is live, with the catalogue fingerprint it recorded. */
  liveCatalogues?(): Promise<readonly NodeCatalogue[]>;
}

export function isClusterStore(store: SessionStore): store is ClusterSessionStore {
  return (
    typeof (store as Partial<ClusterSessionStore>).subscribe === "function" &&
    typeof (store as Partial<ClusterSessionStore>).claimOrphans === "function"
  );
}
