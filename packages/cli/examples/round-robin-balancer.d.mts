/** One connection through the balancer. */
export interface BalancedConnection {
  /** 1, 2, 3, ... in order of arrival. */
  readonly id: number;
  /** Index of the node it went to (-1 until connected). */
  readonly upstream: number;
  /** URL of that node ("" until connected). */
  readonly node: string;
  /** Whether it asked for a WebSocket upgrade. */
  readonly websocket: boolean;
  /** Bytes the client sent so far. */
  readonly sentBytes: number;
  /** Bytes the node sent so far. */
  readonly receivedBytes: number;
  readonly open: boolean;
  /** Whether `cut` closed it. */
  readonly cut: boolean;
}

export interface Balancer {
  /** `http://127.0.0.1:<port>`, for GOLEM_STREAM_URL. */
  readonly url: string;
  /** Every connection so far, oldest first. */
  readonly connections: readonly BalancedConnection[];
  /** Resolves with the first truthy value `predicate` returns, re-checked on all traffic. */
  until<T>(predicate: (connections: readonly BalancedConnection[]) => T | undefined | false | null, timeoutMs?: number): Promise<T>;
  /** Destroys both sides of the connection, as a failing network would. */
  cut(connection: BalancedConnection): boolean;
  close(): Promise<void>;
}

export function startBalancer(upstreams: readonly string[], options?: { host?: string; port?: number }): Promise<Balancer>;
