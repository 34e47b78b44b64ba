/**
 * Fresh UUIDv4s for attempt ids, provisional references and idempotency keys
 * (protocol 9). Web Crypto's `randomUUID` is a global in Node 20 and in
 * browsers, so the runtime needs no `node:crypto` import to make them.
 */
export function randomUUID(): string {
  return globalThis.crypto.randomUUID();
}
