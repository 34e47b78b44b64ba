/**
 * `wsTransport({ tls })`'s settings as users give them: types only, with no
 * Node types in them, so that the browser build's declarations (which name
 * `WsTransportOptions`) compile without `@types/node`.
 */

/** `WsTransportOptions.tls`: what Node's `tls.connect` takes of these names; PEM as text or as its bytes. */
export interface WsTlsOptions {
  readonly ca?: string | Uint8Array | readonly (string | Uint8Array)[];
  readonly cert?: string | Uint8Array | readonly (string | Uint8Array)[];
  readonly key?: string | Uint8Array | readonly (string | Uint8Array)[];
  readonly passphrase?: string;
  readonly servername?: string;
}
