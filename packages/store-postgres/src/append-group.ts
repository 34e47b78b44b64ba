/**
 * A group of writes that are all appends, one run per stream, written by one
 * statement outside any transaction block: PostgreSQL runs it as its own
 * transaction and commits it before it answers, so the group takes one
 * round trip instead of one per control statement (BEGIN with a SAVEPOINT,
 * each run, the RELEASEs, the notifications with the COMMIT).
 *
 * Why no savepoints: a run that does not continue its stream changes
 * nothing and raises nothing (its count does not move, so its rows are not
 * inserted), so the other runs of the statement commit as they would have
 * in their own savepoints. Any error (a deadlock, a timeout) rolls back the
 * whole statement, and the writer then writes the group the careful way.
 *
 * The notifications are sent by the same statement, one per moved run, in
 * the order of the runs (`writeOrder`), so PostgreSQL delivers them only if
 * it commits, after the commit, in commit order.
 *
 * Pure functions: runs in, statement and parameters out.
 */
import { RUN_BYTES, RUN_ROW_BYTES, runLength, runRows, type RunAppend } from "./append-runs.js";

/**
 * The runs of `appends` (`runLength`) as [start, end) index pairs, or
 * undefined when a stream has more than one run (one statement cannot move
 * a stream's count twice) or the appends are not small: each at most
 * `RUN_ROW_BYTES`, together at most `RUN_BYTES` (the statement carries
 * every payload of the group at once; a large one goes as its own statement).
 */
export function distinctRuns(appends: readonly RunAppend[]): [number, number][] | undefined {
  let bytes = 0;
  for (const append of appends) {
    if (append.data.length > RUN_ROW_BYTES) return undefined;
    bytes += append.data.length;
  }
  if (bytes > RUN_BYTES) return undefined;
  const runs: [number, number][] = [];
  const seen = new Set<string>();
  for (let at = 0; at < appends.length;) {
    const first = appends[at]!;
    const key = `${first.log}:${first.streamId}`;
    if (seen.has(key)) return undefined;
    seen.add(key);
    const end = at + runLength(appends, at);
    runs.push([at, end]);
    at = end;
  }
  return runs;
}

/**
 * The statement writing every run of a group, in `schema`, notifying on `$14`
 * (the channel). A run with an ownership epoch (`$15`) moves its stream only
 * while the stream is at that epoch: fencing costs one comparison on the row
 * the run updates anyway, once per run, not per row. The rows' payloads arrive as one `bytea` (`$13`), which
 * `pg` sends in binary, and each row takes its slice (`$9` offsets, `$10`
 * lengths): a `bytea[]` would travel as hex text, encoded by `pg` and parsed
 * back by PostgreSQL (`array_in`, `byteain`) byte by byte.
 */
export function appendGroupStatement(schema: string): string {
  const s = schema;
  const rows = `SELECT x.run, x.sequence, x.item_count, substring($13::bytea FROM x.at + 1 FOR x.length) AS data, x.mime_type, x.parts
      FROM unnest($6::int[], $7::bigint[], $8::bigint[], $9::int[], $10::int[], $11::text[], $12::bytea[]) AS x(run, sequence, item_count, at, length, mime_type, parts)`;
  return `WITH moved AS (
      UPDATE ${s}.streams AS t SET count = t.count + r.total
      FROM unnest($1::int[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $15::bigint[]) AS r(run, log, stream_id, start, total, epoch)
      WHERE t.stream_id = r.stream_id AND t.count = r.start AND t.direction = r.log
        AND CASE WHEN r.log = 'input' THEN t.input_terminal IS NULL ELSE NOT t.output_terminal END
        AND (r.epoch IS NULL OR t.owner_epoch = r.epoch)
      RETURNING r.run, r.log, t.stream_id, t.session_id
    ), input_rows AS (
      INSERT INTO ${s}.input_chunks (stream_id, sequence, item_count, data, mime_type, parts)
      SELECT m.stream_id, x.sequence, x.item_count, x.data, x.mime_type, x.parts
      FROM (${rows}) AS x JOIN moved AS m ON m.run = x.run AND m.log = 'input'
    ), output_rows AS (
      INSERT INTO ${s}.output_events (stream_id, sequence, event, item_count, data, mime_type, outcome, parts)
      SELECT m.stream_id, x.sequence, 'item', x.item_count, x.data, x.mime_type, NULL, x.parts
      FROM (${rows}) AS x JOIN moved AS m ON m.run = x.run AND m.log = 'output'
    )
    SELECT n.run, n.session_id, pg_notify($14, json_build_object('s', n.session_id, 'c', json_build_object('kind', n.log, 'streamId', n.stream_id))::text)
    FROM (SELECT * FROM moved ORDER BY run) AS n`;
}

/** The parameters of `appendGroupStatement` for `runs` of `appends`, rows packed up to `packedRowBytes`. */
export function appendGroupValues(
  appends: readonly RunAppend[],
  runs: readonly [number, number][],
  packedRowBytes: number,
  channel: string,
): unknown[] {
  const runIndex: number[] = [];
  const logs: string[] = [];
  const streams: string[] = [];
  const starts: string[] = [];
  const totals: string[] = [];
  const epochs: (string | null)[] = [];
  const rowRun: number[] = [];
  const sequences: string[] = [];
  const counts: string[] = [];
  const offsets: number[] = [];
  const lengths: number[] = [];
  const data: Uint8Array[] = [];
  const mimeTypes: (string | null)[] = [];
  const parts: (Buffer | null)[] = [];
  let bytes = 0;
  runs.forEach(([start, end], run) => {
    const members = appends.slice(start, end);
    const first = members[0]!;
    runIndex.push(run);
    logs.push(first.log);
    streams.push(first.streamId);
    starts.push(first.sequence.toString());
    totals.push(members.reduce((sum, append) => sum + append.itemCount, 0n).toString());
    epochs.push(first.epoch === undefined ? null : first.epoch.toString());
    for (const row of runRows(members, packedRowBytes)) {
      rowRun.push(run);
      sequences.push(row.sequence.toString());
      counts.push(row.itemCount.toString());
      offsets.push(bytes);
      lengths.push(row.data.length);
      bytes += row.data.length;
      data.push(row.data);
      mimeTypes.push(row.mimeType ?? null);
      parts.push(row.parts === undefined ? null : Buffer.from(row.parts.buffer, row.parts.byteOffset, row.parts.byteLength));
    }
  });
  const payload = Buffer.concat(data, bytes);
  return [runIndex, logs, streams, starts, totals, rowRun, sequences, counts, offsets, lengths, mimeTypes, parts, payload, channel, epochs];
}
