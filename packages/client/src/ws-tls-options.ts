/**
 * `wsTransport({ tls })`'s settings as users give them: types only, with no
 * Node types in them, so that the browser build's declarations (which name
 * `WsTransportOptions`) compile without `@types/node`.
 */

/** PEM text, or its bytes. */
export type Pem = string | Uint8Array;

/** `WsTransportOptions.tls`: what Node's `tls.connect` takes of these names. */
export interface WsTlsOptions {
  readonly ca?: Pem | readonly Pem[];
  readonly cert?: Pem | readonly Pem[];
  readonly key?: Pem | readonly Pem[];
  readonly passphrase?: string;
  readonly servername?: string;
}
