/**
 * One connection attempt: open the transport, send the frozen descriptor,
 * feed every server message to the session, and report exactly one outcome
 * when the connection ends (protocol sections 8 and 9). The connection-local
 * channel table lives here and dies with the connection.
 */
import { ProtocolError, type ClientMessage, type ServerMessage } from "@golem-stream/wire";
import type { ConnectionOutcome } from "./attach-policy.js";
import { ClientError, serverViolation } from "./errors.js";
import type { InputFeeder } from "./input-feeder.js";
import type { OutputStream } from "./output-stream.js";
import type { CloseInfo, Connection, Transport } from "./transport.js";

export type ChannelEntry =
  | { readonly direction: "input"; readonly feeder: InputFeeder | undefined }
  | {
      readonly direction: "output";
      readonly stream: OutputStream;
      /** The sequence after the stream's last item on this connection, once one came on it. */
      next: bigint | undefined;
      /** The stream's terminal came on this connection. */
      ended: boolean;
    };

/** One connection attempt and its connection-local channel table (protocol section 8). */
export interface Attachment {
  connection: Connection | undefined;
  accepted: boolean;
  /** An `invocationResult` came on this connection (protocol 6.3: at most once). */
  resultReceived: boolean;
  /** Server messages handed to the session on this connection, the one being handled included. */
  received: number;
  /** The attempt has ended (`settle` was called): nothing more is sent or received on it. */
  settled: boolean;
  readonly channels: Map<number, ChannelEntry>;
  readonly channelOf: Map<OutputStream | InputFeeder, number>;
  /** Output streams whose `streamCancel` was sent on this connection. */
  readonly cancelsSent: Set<OutputStream>;
  /** Ends the attempt with `outcome` (the first call wins) and closes the connection. */
  settle(outcome: ConnectionOutcome): void;
  /**
   * How the connection ended, once the transport reports its close; `undefined` if it never
   * opened. After this side's close, a close frame from the server (any code but 1006) says the
   * server read everything sent before it: WebSocket frames arrive in order.
   */
  readonly closed: Promise<CloseInfo | undefined>;
}

export interface AttachmentOptions {
  readonly url: string;
  readonly getToken: () => string | Promise<string>;
  readonly transport: Transport;
  readonly signal: AbortSignal;
  /** The descriptor to send once connected; called at the moment it is sent. */
  readonly firstMessage: () => ClientMessage;
  /** Handles one server message; a throw is a server violation that ends the attempt. */
  readonly onMessage: (attachment: Attachment, message: ServerMessage, wireBytes: number) => void;
  /** The attempt ended: stop using its channels. */
  readonly onSettle: () => void;
  /**
   * How long the first message may go unanswered (no `invocationAccepted`, no
   * `invocationRejected`) before the connection is dropped as an uncertain
   * outcome, which retries the exact descriptor. 0 waits forever.
   */
  readonly acceptanceTimeoutMs: number;
}

/** Opens one attachment; `outcome` resolves when it ends, for whatever reason. */
export function openAttachment(options: AttachmentOptions): { attachment: Attachment; outcome: Promise<ConnectionOutcome> } {
  let resolveOutcome!: (outcome: ConnectionOutcome) => void;
  const outcome = new Promise<ConnectionOutcome>((resolve) => (resolveOutcome = resolve));
  /** Pending while the first message waits for its answer (pings do not count: a server may answer those and nothing else). */
  let unanswered: ReturnType<typeof setTimeout> | undefined;
  let answered = false;
  let reportClose!: (info: CloseInfo | undefined) => void;
  const closed = new Promise<CloseInfo | undefined>((resolve) => (reportClose = resolve));
  const attachment: Attachment = {
    closed,
    connection: undefined,
    accepted: false,
    resultReceived: false,
    received: 0,
    settled: false,
    channels: new Map(),
    channelOf: new Map(),
    cancelsSent: new Set(),
    settle: (result) => {
      if (attachment.settled) return;
      attachment.settled = true;
      clearTimeout(unanswered);
      options.onSettle();
      // Protocol 11: a framing or state violation closes with 1002; every other end is normal.
      const violated = result.kind === "fatal" && result.error.kind === "server-violation";
      attachment.connection?.close(violated ? 1002 : 1000, violated ? (result.error.code ?? "protocol-error") : result.kind);
      resolveOutcome(result);
    },
  };
  void (async () => {
    let token: string;
    try {
      token = await options.getToken();
    } catch (cause) {
      reportClose(undefined);
      attachment.settle({ kind: "fatal", error: new ClientError("invalid-argument", "getToken failed", { cause }) });
      return;
    }
    try {
      const connection = await options.transport.connect(
        { url: options.url, token, signal: options.signal },
        {
          onMessage: (message, wireBytes) => {
            if (attachment.settled) return;
            answered = true;
            clearTimeout(unanswered);
            attachment.received++;
            try {
              options.onMessage(attachment, message, wireBytes);
            } catch (error) {
              attachment.settle({ kind: "fatal", error: serverViolation(error) });
            }
          },
          onClose: (info) => {
            reportClose(info);
            if (info.error !== undefined) attachment.settle({ kind: "fatal", error: serverViolation(info.error) });
            else if (info.refusal !== undefined && !info.refusal.retryable) attachment.settle({ kind: "rejected", error: info.refusal });
            else if (info.refusal !== undefined) attachment.settle({ kind: "lost", cause: `refused: ${info.refusal.code}` });
            else attachment.settle({ kind: "lost", cause: `connection closed (${info.code})` });
          },
        },
      );
      if (attachment.settled) {
        connection.close(1000, "settled");
        return;
      }
      attachment.connection = connection;
      const first = options.firstMessage();
      connection.send(first);
      const timeoutMs = options.acceptanceTimeoutMs;
      if (timeoutMs > 0 && !attachment.settled && !answered) {
        unanswered = setTimeout(() => {
          // Whether the server acted on the message is unknown: an uncertain outcome (protocol 9).
          attachment.settle({ kind: "lost", cause: `no answer to ${first.type} within ${timeoutMs} ms` });
        }, timeoutMs);
      }
    } catch (error) {
      reportClose(undefined);
      if (error instanceof ProtocolError && !error.retryable) attachment.settle({ kind: "rejected", error });
      // The transport's word that no new attempt can succeed (wsTransport: a refused TLS certificate).
      else if (error instanceof ClientError) attachment.settle({ kind: "fatal", error });
      else attachment.settle({ kind: "lost", cause: error instanceof Error ? error.message : "connect failed" });
    }
  })();
  return { attachment, outcome };
}
