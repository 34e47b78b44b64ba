/**
 * Reads the stream identity out of a stream or cursor token — without
 * verifying it, which only the server can do. The client needs this for one
 * thing: resuming from a checkpoint written by another process, where it
 * holds cursor tokens but not which stream each belongs to, and must replace a
 * stream's old cursor once it delivers a newer one (protocol 5.2 allows at most
 * one cursor per output stream). Token layout: protocol 10.1, decisions §4.
 *
 * Returns `undefined` for anything it cannot read; callers then treat the
 * token as an identity of its own. Bounded: tokens longer than the protocol
 * limit are not decoded at all.
 */
import { LIMITS } from "@golem-stream/wire";

const PREFIX = "gai1_";
const SIGNATURE_BYTES = 32;
const STREAM_ID_FIELD = 32;

export function streamIdentityOf(token: string): string | undefined {
  if (token.length > LIMITS.maxTokenBytes || !token.startsWith(PREFIX)) return undefined;
  const body = token.slice(PREFIX.length);
  if (!/^[A-Za-z0-9_-]*$/.test(body)) return undefined;
  const bytes = Buffer.from(body, "base64url");
  const payloadEnd = bytes.length - SIGNATURE_BYTES;
  if (payloadEnd < 3) return undefined;
  let at = 2; // format version, token kind
  const keyIdLength = bytes[at++]!;
  at += keyIdLength;
  while (at + 5 <= payloadEnd) {
    const field = bytes[at]!;
    const length = bytes.readUInt32BE(at + 1);
    at += 5;
    if (at + length > payloadEnd) return undefined;
    if (field === STREAM_ID_FIELD) return bytes.subarray(at, at + length).toString("hex");
    if (field > STREAM_ID_FIELD) return undefined;
    at += length;
  }
  return undefined;
}
