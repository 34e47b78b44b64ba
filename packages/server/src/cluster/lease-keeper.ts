/**
 * A cluster node's lease (docs/cluster.md): the catalogue compared with the
 * live nodes' before the node joins (a refused node never heartbeats), the
 * first heartbeat that joins it, a heartbeat every third of the lease TTL,
 * and every half of it a claim of the sessions whose owner's lease lapsed,
 * once this node has seen the store available for a full lease
 * (store-availability.ts). What a claim does to the sessions is the
 * caller's (`claimOrphans`, the node's lifecycle): this file only keeps time.
 */
import type { Logger } from "../options.js";
import type { ServerObserver } from "../observability/server-observer.js";
import type { ClusterSessionStore } from "../store/cluster-store.js";
import { CatalogueCheck, type CatalogueDetails } from "./catalogue-check.js";
import { StoreAvailability } from "./store-availability.js";

export interface LeaseOptions {
  readonly leaseTtlMs: number;
  /** The fingerprint of the catalogue this node serves, compared with the live nodes' (none: no check). */
  readonly catalogue: string | undefined;
  readonly allowCatalogueDrift: boolean;
}

export class LeaseKeeper {
  /** Rejects with `CatalogueDriftError` when this node may not join. */
  readonly catalogueVerified: Promise<void>;
  /** Resolves once the node's first heartbeat is committed (and its catalogue recorded). */
  readonly joined: Promise<void>;
  readonly #check: CatalogueCheck | undefined;
  readonly #availability: StoreAvailability;
  readonly #observer: ServerObserver;
  readonly #logger: Logger;
  readonly #claimOrphans: () => Promise<number>;
  readonly #heartbeat: NodeJS.Timeout;
  readonly #orphanClaims: NodeJS.Timeout;
  /** The claim round under way (`#claim`), if any. */
  #round: Promise<void> | undefined;

  /** `claimOrphans` claims the lapsed nodes' sessions and resolves to how many. */
  constructor(
    cluster: ClusterSessionStore,
    options: LeaseOptions,
    logger: Logger,
    observer: ServerObserver,
    claimOrphans: () => Promise<number>,
  ) {
    const { leaseTtlMs } = options;
    this.#observer = observer;
    this.#logger = logger;
    this.#claimOrphans = claimOrphans;
    const check =
      options.catalogue === undefined ? undefined : new CatalogueCheck(cluster, options.catalogue, options.allowCatalogueDrift, logger);
    this.#check = check;
    // The catalogue is compared before the first heartbeat: a refused node never joins.
    this.catalogueVerified = check === undefined ? Promise.resolve() : check.verify();
    const availability = new StoreAvailability(leaseTtlMs, Math.floor(leaseTtlMs / 3));
    this.#availability = availability;
    this.joined = this.catalogueVerified
      .then(() => cluster.heartbeat(leaseTtlMs))
      .then(() => availability.succeeded(performance.now()))
      .then(() => check?.record())
      .then(() => observer.leaseHeartbeat(true));
    let refused = false;
    this.catalogueVerified.catch(() => (refused = true));
    const beat = async (): Promise<void> =>
      refused
        ? undefined
        : cluster.heartbeat(leaseTtlMs).then(
            (report) => {
              availability.succeeded(performance.now());
              observer.leaseHeartbeat(true);
              // A store that cannot tell reports nothing (`HeartbeatReport` is optional).
              if (report !== undefined) observer.nodeIdShared(report.otherProcess);
              if (report?.otherProcess === true) reportOtherProcess(cluster.nodeId, logger);
              return check?.refresh();
            },
            (error: unknown) => {
              availability.failed();
              observer.leaseHeartbeat(false);
              logger.error("lease heartbeat failed", { event: "cluster.heartbeat-error", error: String(error) });
            },
          );
    this.#heartbeat = setInterval(() => void beat(), Math.floor(leaseTtlMs / 3));
    this.#heartbeat.unref();
    this.#orphanClaims = setInterval(() => this.#claim(), Math.floor(leaseTtlMs / 2));
    this.#orphanClaims.unref();
  }

  /** The catalogue check's details for `/readyz`, when there is a check. */
  catalogueDetails(): CatalogueDetails | undefined {
    return this.#check?.details();
  }

  /**
   * No more claims; the heartbeats go on (a draining node: what it claimed now it would hand on
   * again within its deadline, each time a re-run more for the invocation). Resolves once the
   * round under way, if any, has handled what it claimed (never rejects): those sessions are this
   * node's to run or hand over, and a drain that went on without them would leave them neither.
   */
  stopClaims(): Promise<void> {
    clearInterval(this.#orphanClaims);
    return this.#round ?? Promise.resolve();
  }

  /** No more heartbeats or claims (the lease then lapses unless the node leaves first). */
  stop(): void {
    clearInterval(this.#heartbeat);
    clearInterval(this.#orphanClaims);
  }

  #claim(): void {
    // Not before this node has seen the store available for a full lease (store-availability.ts),
    // nor while the round before goes on (a slow store): that round still handles sessions it
    // claimed, and a second one would take them again (node-lifecycle.ts).
    if (this.#round !== undefined || !this.#availability.mayClaim(performance.now())) return;
    this.#round = this.#claimRound().finally(() => (this.#round = undefined));
  }

  async #claimRound(): Promise<void> {
    try {
      const claimed = await this.#claimOrphans();
      if (claimed > 0) this.#observer.orphansClaimed(claimed);
    } catch (error) {
      this.#logger.error("orphan claim failed", { event: "cluster.orphan-claim-failed", error: String(error) });
    }
  }
}

/**
 * Two processes keep one node id's lease: each runs the sessions it starts as that node, and
 * neither can tell the other's from its own, so a session of the one that dies is never claimed
 * while the other keeps the lease. Said at every heartbeat until one of them stops.
 */
function reportOtherProcess(nodeId: string, logger: Logger): void {
  logger.error("another process runs with this node's id: give every node process its own --node-id", {
    event: "cluster.node-id-conflict",
    node: nodeId,
  });
}
