/**
 * Every node of a cluster serves the same catalogue: a client may start an
 * invocation at any node, resume it at any other, and read the catalogue
 * from whichever the balancer picks. Each node records the fingerprint of
 * its catalogue beside its lease (`catalogueFingerprint`); one that finds a
 * live node with another fingerprint refuses to join, before its first
 * heartbeat, unless drift is allowed (a rolling upgrade of the catalogue):
 * it then serves, logs the difference and reports it in `/readyz`'s
 * details, re-checked at every heartbeat.
 *
 * Nodes that recorded no fingerprint (an `AgentHost` of their own, a node
 * of an earlier version) are not compared: nothing is known of their
 * catalogue. Two nodes with different catalogues that start at the same
 * instant may both find nobody to compare with; the next heartbeat's check
 * then reports the drift in the log and `/readyz`.
 */
import type { Logger } from "../options.js";
import type { ClusterSessionStore, NodeCatalogue } from "../store/cluster-store.js";

/** A live node serves another catalogue, and drift is not allowed. */
export class CatalogueDriftError extends Error {
  override readonly name = "CatalogueDriftError";
  readonly code = "catalogue-drift";
  /** The live nodes whose catalogue differs, with their fingerprints. */
  readonly nodes: readonly NodeCatalogue[];

  constructor(fingerprint: string, nodes: readonly NodeCatalogue[]) {
    super(
      `this node's catalogue (fingerprint ${short(fingerprint)}) differs from that of ${nodes.length === 1 ? "node" : "nodes"} ` +
        `${nodes.map((node) => `${node.nodeId} (${short(node.fingerprint)})`).join(", ")}: every node of a cluster must serve the same agent types; ` +
        `allow the difference only during a rolling upgrade (cluster.allowCatalogueDrift, serve --allow-catalogue-drift)`,
    );
    this.nodes = nodes;
  }
}

/** What `/readyz` says of the catalogue check, under `details.catalogue`. */
export interface CatalogueDetails {
  /** This node's catalogue fingerprint. */
  readonly fingerprint: string;
  /**
   * Live nodes serving another catalogue: non-empty only once a node joined
   * with drift allowed, at that node and (as it joined after them) at the
   * nodes that did not allow it.
   */
  readonly differing: readonly { readonly node: string; readonly fingerprint: string }[];
}

export class CatalogueCheck {
  readonly #store: ClusterSessionStore;
  readonly #fingerprint: string;
  readonly #allowDrift: boolean;
  readonly #logger: Logger;
  #differing: readonly NodeCatalogue[] = [];
  /** Off when the store cannot record fingerprints (an older schema it may not change): the node serves unchecked. */
  #active = true;

  constructor(store: ClusterSessionStore, fingerprint: string, allowDrift: boolean, logger: Logger) {
    this.#store = store;
    this.#fingerprint = fingerprint;
    this.#allowDrift = allowDrift;
    this.#logger = logger;
  }

  /** Before this node's first heartbeat: throws `CatalogueDriftError` when a live node serves another catalogue and drift is not allowed. */
  async verify(): Promise<void> {
    if (this.#store.setCatalogue === undefined || this.#store.liveCatalogues === undefined) {
      this.#disable("this store does not record catalogues (setCatalogue, liveCatalogues)");
      return;
    }
    const differing = await this.#differingNodes();
    if (differing === undefined) return;
    if (differing.length > 0 && !this.#allowDrift) throw new CatalogueDriftError(this.#fingerprint, differing);
    this.#update(differing);
  }

  /** After the heartbeat: records this node's fingerprint beside its lease. */
  async record(): Promise<void> {
    if (!this.#active) return;
    try {
      await this.#store.setCatalogue?.(this.#fingerprint);
    } catch (error) {
      this.#disable(error);
    }
  }

  /** At each heartbeat: whether live nodes differ now; a change is logged. */
  async refresh(): Promise<void> {
    const differing = await this.#differingNodes();
    if (differing !== undefined) this.#update(differing);
  }

  details(): CatalogueDetails | undefined {
    if (!this.#active) return undefined;
    return {
      fingerprint: this.#fingerprint,
      differing: this.#differing.map((node) => ({ node: node.nodeId, fingerprint: node.fingerprint ?? "" })),
    };
  }

  /** The live nodes with another fingerprint; undefined when they cannot be read (the check is then off, or the store is down). */
  async #differingNodes(): Promise<NodeCatalogue[] | undefined> {
    if (!this.#active || this.#store.liveCatalogues === undefined) return undefined;
    try {
      const nodes = await this.#store.liveCatalogues();
      return nodes.filter((node) => node.fingerprint !== undefined && node.fingerprint !== this.#fingerprint);
    } catch (error) {
      if (isMissingColumn(error)) this.#disable(error);
      return undefined;
    }
  }

  #update(differing: readonly NodeCatalogue[]): void {
    const before = this.#differing.map((node) => `${node.nodeId}=${node.fingerprint}`).join(",");
    const now = differing.map((node) => `${node.nodeId}=${node.fingerprint}`).join(",");
    this.#differing = differing;
    if (before === now) return;
    if (differing.length === 0) {
      this.#logger.info("every live node serves this catalogue", {
        event: "cluster.catalogue-agreed",
        fingerprint: short(this.#fingerprint),
      });
    } else {
      // A node that did not allow drift still says so: another joined allowing it, and an
      // operator watching this node should learn of it too; but not that this node allowed it.
      const why = this.#allowDrift ? "(allowed drift)" : "(they joined allowing drift; this node does not allow it)";
      this.#logger.warn(`live nodes serve another catalogue ${why}`, {
        event: "cluster.catalogue-drift",
        fingerprint: short(this.#fingerprint),
        nodes: differing.map((node) => `${node.nodeId} (${short(node.fingerprint)})`).join(", "),
      });
    }
  }

  #disable(error: unknown): void {
    this.#active = false;
    this.#logger.warn("cannot compare catalogues with the other nodes", {
      event: "cluster.catalogue-check-off",
      error: String(error),
    });
  }
}

/** A fingerprint as people read it: its first 12 hex digits. */
function short(fingerprint: string | undefined): string {
  return fingerprint === undefined ? "none" : fingerprint.slice(0, 12);
}

/** PostgreSQL's undefined_column (42703): a schema whose node table has no catalogue column. */
function isMissingColumn(error: unknown): boolean {
  return (
    (error as { code?: unknown } | null)?.code === "42703" || (error as { cause?: { code?: unknown } } | null)?.cause?.code === "42703"
  );
}
