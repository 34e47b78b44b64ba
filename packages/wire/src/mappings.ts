/**
 * Stream mappings (protocol section 4.3): how the server binds a channel
 * number to a stable stream token, and, for inputs, reports the durable
 * high-water.
 */
import { type Codec, arrayCodec, elementPath, invalidAt, memberPath, objectCodec, optional, required } from "./codec.js";
import { booleanCodec, channelCodec, oneOfCodec, tokenCodec, u64Codec, uuidV4Codec } from "./fields.js";
import { LIMITS } from "./limits.js";
import type { InputHighWater, StreamDirection, StreamMapping } from "./messages.js";

const inputHighWaterCodec = objectCodec<InputHighWater>("inputHighWater", {
  sequence: required(u64Codec),
  terminal: required(booleanCodec),
});

const streamMappingCodec = objectCodec<StreamMapping>(
  "a stream mapping",
  {
    channel: required(channelCodec),
    direction: required(oneOfCodec<StreamDirection>(["input", "output"])),
    inputHighWater: optional(inputHighWaterCodec),
    provisionalRef: optional(uuidV4Codec),
    streamToken: required(tokenCodec),
  },
  (mapping, at) => {
    if (mapping.direction === "input") {
      if (mapping.inputHighWater === undefined) {
        throw invalidAt(memberPath(at, "inputHighWater"), "is required on an input mapping");
      }
    } else {
      if (mapping.inputHighWater !== undefined) {
        throw invalidAt(memberPath(at, "inputHighWater"), "is not allowed on an output mapping");
      }
      // Provisional references name client-created streams, which are inputs (section 3.2).
      if (mapping.provisionalRef !== undefined) {
        throw invalidAt(memberPath(at, "provisionalRef"), "is not allowed on an output mapping");
      }
    }
  },
);

/**
 * The mappings of one message: distinct channels, stream tokens and
 * provisional references. At most one per stream a session may ever have.
 */
export const mappingsCodec: Codec<readonly StreamMapping[]> = arrayCodec(
  streamMappingCodec,
  { max: LIMITS.maxStreamsPerSession },
  (mappings, at) => {
    if (mappings.length < 2) return;
    const channels = new Set<number>();
    const tokens = new Set<string>();
    const refs = new Set<string>();
    mappings.forEach((mapping, index) => {
      const here = elementPath(at, index);
      if (channels.has(mapping.channel)) throw invalidAt(memberPath(here, "channel"), "repeats a channel of this message");
      channels.add(mapping.channel);
      if (tokens.has(mapping.streamToken)) {
        throw invalidAt(memberPath(here, "streamToken"), "repeats a stream token of this message");
      }
      tokens.add(mapping.streamToken);
      if (mapping.provisionalRef !== undefined) {
        if (refs.has(mapping.provisionalRef)) {
          throw invalidAt(memberPath(here, "provisionalRef"), "repeats a provisional reference of this message");
        }
        refs.add(mapping.provisionalRef);
      }
    });
  },
);
