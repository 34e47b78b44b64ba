/**
 * `unauthenticated` for a request that presents no credential at all (no
 * `Authorization` bearer, no bearer subprotocol entry).
 *
 * Its own class so that the failed-authentication throttle does not count
 * it: such a request guesses nothing, and any web page can send it. A page on
 * another site cannot set `Authorization` (a `no-cors` request drops it, a
 * CORS one needs a preflight the server refuses) and sends its `GET`s without
 * `Origin`: counted, twenty blind requests from a page the user visited
 * locked every client on the same machine out of the server, valid tokens
 * included.
 */
import { ProtocolError } from "@golem-stream/wire";

export class CredentialMissing extends ProtocolError {
  constructor() {
    super("unauthenticated", "a bearer token is required");
  }
}
