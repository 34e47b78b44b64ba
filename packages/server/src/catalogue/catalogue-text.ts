/**
 * How long the catalogue's canonical text may be (discovery's answer, the fingerprint's input):
 * unbounded. It is the operator's own (the agents module), never a peer's, and a catalogue of
 * thousands of agent types may well pass the 8 MiB that `canonicalJson` allows a message by default.
 */
export const CATALOGUE_TEXT = { maxBytes: Number.MAX_SAFE_INTEGER } as const;
