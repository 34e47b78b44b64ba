/**
 * Fencing on the write path (docs/cluster.md, *Fencing*): after an owner's
 * statement, guarded by its ownership epoch, changed nothing, whether it was
 * refused for its epoch (`OwnershipLostError`) or failed for its own reason.
 * Asked only on that path, so a write that goes through pays nothing for it.
 */
import { OwnershipLostError } from "@golem-stream/server/store";
import type { Statements } from "./statements.js";
import type { WriteContext } from "./write-queue.js";

/**
 * An `OwnershipLostError` if the row (`query` reads its `owner_epoch` and `session_id` by `id`)
 * is at another epoch than `epoch`; nothing without an epoch (a write that is not an owner's).
 */
export async function checkEpoch(tx: WriteContext, query: string, id: string, epoch: bigint | undefined): Promise<void> {
  if (epoch === undefined) return;
  const row = (await tx.query<{ owner_epoch: string; session_id: string }>(query, [id])).rows[0];
  if (row !== undefined && BigInt(row.owner_epoch) !== epoch) throw new OwnershipLostError(row.session_id, epoch, BigInt(row.owner_epoch));
}

/** The error of an append that did not move its stream: refused for its epoch, or `message`. */
export async function refusal(
  tx: WriteContext,
  sql: Statements,
  streamId: string,
  epoch: bigint | undefined,
  message: string,
): Promise<Error> {
  await checkEpoch(tx, sql.streamEpoch, streamId, epoch);
  return new Error(message);
}
