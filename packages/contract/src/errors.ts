/** Errors of contract definitions and of comparing a contract with a server's catalogue. */

export const CONTRACT_ERROR_CODES = [
  /** `defineAgentType` was given a specification the protocol would not accept. */
  "invalid-contract",
  /** The server's catalogue describes the agent type differently from the contract. */
  "contract-mismatch",
] as const;
export type ContractErrorCode = (typeof CONTRACT_ERROR_CODES)[number];

export class ContractError extends Error {
  override readonly name = "ContractError";
  readonly code: ContractErrorCode;
  /** For `contract-mismatch`: one line per difference found. */
  readonly differences: readonly string[];

  constructor(message: string, options: { code?: ContractErrorCode; differences?: readonly string[]; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code ?? "invalid-contract";
    this.differences = options.differences ?? [];
  }
}
