/**
 * The server's HTTP error envelope (decisions §5): `{"code":C,"error":m}`, or for a 400
 * `{"code":C,"errors":[m]}`. Read from the body of a refused handshake (`ws-transport.ts`) and of
 * a refused catalogue request (`catalogue-refusal.ts`), which differ only in what a body that is
 * no envelope fails with.
 */
import { getMember, isErrorCode, isJsonObject, parseStrictJson, type ErrorCode, type JsonValue } from "@golem-stream/wire";

export interface ErrorEnvelope {
  readonly code: ErrorCode;
  /** `error`, else the first of `errors`; undefined when it has neither. */
  readonly message: string | undefined;
}

/** The envelope `body` holds (at most `maxBytes` of strict JSON with a public `code`), or undefined. */
export function errorEnvelope(body: Uint8Array, maxBytes: number): ErrorEnvelope | undefined {
  let json: JsonValue;
  try {
    json = parseStrictJson(body, { maxBytes, what: "error envelope" });
  } catch {
    return undefined;
  }
  if (!isJsonObject(json)) return undefined;
  const code = getMember(json, "code");
  if (!isErrorCode(code)) return undefined;
  const error = getMember(json, "error");
  const errors = getMember(json, "errors");
  const message = typeof error === "string" ? error : Array.isArray(errors) && typeof errors[0] === "string" ? errors[0] : undefined;
  return { code, message };
}
