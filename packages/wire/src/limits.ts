/**
 * The frozen limits of protocol section 12, with the values of decisions-v1
 * section 6. Every runtime option that bounds work defaults to one of these.
 * Deployments may choose smaller limits, never larger ones.
 *
 * Frozen at run time too (`as const` binds only the compiler): the decoders
 * read their bounds from here, so a module that assigned `LIMITS.maxJsonDepth`
 * would otherwise raise or switch off a bound for the whole process.
 */

export const KiB = 1024;
export const MiB = 1024 * 1024;

export const LIMITS = Object.freeze({
  /** A complete text WebSocket message, decompressed. */
  maxTextMessageBytes: 8 * MiB,
  /** Raw payload of one `input-binary` / `output-binary` message. */
  maxBinaryPayloadBytes: 16 * MiB,
  /** Raw payload of one packed `input-u8` / `output-u8` message. */
  maxPackedU8PayloadBytes: 1 * MiB,
  /** Metadata JSON of one binary message. */
  maxBinaryMetadataBytes: 64 * KiB,
  /** Byte charge (section 12) of one decoded SchemaValue. */
  maxValueByteCharge: 8 * MiB,
  /** Nesting depth of arrays and objects in one JSON document. */
  maxJsonDepth: 128,
  /** Queued protocol entries (items or packed batches) per stream. */
  maxQueuedEntriesPerStream: 256,
  /** Byte permits per session. */
  maxQueuedBytesPerSession: 64 * MiB,
  /** Streams per session, both directions, over the session's life. */
  maxStreamsPerSession: 4096,
  /** Configuration entries in one start. */
  maxConfigEntries: 256,
  /** Path segments of one configuration entry. */
  maxConfigPathSegments: 32,
  /** An invocation idempotency key, UTF-8 bytes (non-empty). */
  maxIdempotencyKeyBytes: 1 * KiB,
  /** An opaque `gai1_` token, ASCII bytes. */
  maxTokenBytes: 8192,
  /** A token key id, UTF-8 bytes (at least 1). */
  maxKeyIdBytes: 64,
  /** Default per-stream buffer of unacknowledged client input. */
  defaultClientUnackedInputBytes: 8 * MiB,
  /** Default retention of a durable session after invocationFinished. */
  defaultSessionRetentionMs: 24 * 60 * 60 * 1000,
} as const);

/** Largest binary message: payload plus the 4-byte length prefix plus metadata. */
export const MAX_BINARY_MESSAGE_BYTES = 4 + LIMITS.maxBinaryMetadataBytes + LIMITS.maxBinaryPayloadBytes;

/** 2^64 - 1, the largest u64. */
export const U64_MAX = (1n << 64n) - 1n;
/** Largest channel number (channels are 1 .. 2^32 - 1). */
export const CHANNEL_MAX = 0xffff_ffff;
