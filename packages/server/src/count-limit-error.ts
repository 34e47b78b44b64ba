/**
 * `limit-exceeded` for a count the server keeps over a session's life or a
 * connection (streams per session, channel numbers): the message that hit
 * it is not oversized, so the close after the rejection is 1002 like every
 * other violation (sections 6.2, 11). Close 1009 stays reserved for input
 * that is too large, which is what the wire package's `limit-exceeded` means.
 */
import { CLOSE_PROTOCOL_ERROR, ProtocolError } from "@golem-stream/wire";

export class CountLimitError extends ProtocolError {
  constructor(message: string) {
    super("limit-exceeded", message);
  }

  override get closeCode(): number {
    return CLOSE_PROTOCOL_ERROR;
  }
}
