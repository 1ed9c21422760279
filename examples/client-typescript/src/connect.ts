// A connection to a troupe scheduler: Cap'n Proto two-party RPC over one TCP connection, with
// the scheduler's Gateway as the bootstrap capability. capnp-es brings the RPC protocol (level
// 1) but no network transport, so this file frames messages on a Node socket itself.
import * as net from "node:net";
import * as capnp from "capnp-es";
import { Message as RpcMessage } from "capnp-es/capnp/rpc";
import { ErrorCode } from "./schema/common.js";
import {
  ClientService$Client,
  Gateway,
  Gateway$Client,
  Gateway_Client$Results,
  Gateway_Client$Results$Promise,
} from "./schema/gateway.js";

/// A call the scheduler refused: its Common.Error, code and message.
export class Refused extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
  }

  /// The code's name as in common.capnp's ErrorCode (invalidArgument, notFound, ...).
  get codeName(): string {
    const name = Object.entries(ErrorCode).find(([, value]) => value === this.code)?.[0];
    return name === undefined ? `code ${this.code}` : camel(name);
  }
}

/// The connection was lost, or never made: retry against the scheduler's next start.
export class Unreachable extends Error {}

/// Results that carry a Common.Error (set only when the call was refused).
interface Answered {
  _hasError(): boolean;
  readonly error: { readonly code: ErrorCode; readonly message: string };
}

/// Throws Refused when the scheduler set the results' error; an unset error reads as none.
export function check<R extends Answered>(results: R): R {
  if (results._hasError() && results.error.code !== ErrorCode.NONE) {
    throw new Refused(results.error.code, results.error.message);
  }
  return results;
}

/// CONSTANT_CASE as the camelCase of the schema ("WORKFLOW_SUBMITTED" -> "workflowSubmitted").
export function camel(name: string): string {
  return name.toLowerCase().replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/// The stream framing of Cap'n Proto messages (a segment table, then the segments) on a socket.
class SocketTransport implements capnp.Transport {
  private pending: Buffer = Buffer.alloc(0);
  private readonly received: RpcMessage[] = [];
  private waiter?: { resolve: (m: RpcMessage) => void; reject: (e?: unknown) => void };
  private ended = false;

  constructor(
    private readonly socket: net.Socket,
    private readonly onLost: (why: Error) => void,
  ) {
    socket.on("data", (chunk: Buffer) => this.receive(chunk));
    socket.on("error", (e) => this.end(new Unreachable(`lost the scheduler: ${e.message}`)));
    socket.on("close", () => this.end(new Unreachable("the scheduler closed the connection")));
  }

  sendMessage(msg: RpcMessage): void {
    if (!this.ended) this.socket.write(new Uint8Array(msg.segment.message.toArrayBuffer()));
  }

  recvMessage(): Promise<RpcMessage> {
    const next = this.received.shift();
    if (next !== undefined) return Promise.resolve(next);
    // Conn's read loop ends quietly on a rejection without a reason.
    if (this.ended) return Promise.reject();
    return new Promise((resolve, reject) => (this.waiter = { resolve, reject }));
  }

  close(): void {
    this.end(new Unreachable("the connection was closed"));
    this.socket.destroy();
  }

  private receive(chunk: Buffer): void {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    for (;;) {
      const size = this.frameSize();
      if (size === undefined || this.pending.length < size) return;
      const frame = this.pending.subarray(0, size);
      this.pending = this.pending.subarray(size);
      const message = new capnp.Message(frame, false).getRoot(RpcMessage);
      if (this.waiter !== undefined) {
        const { resolve } = this.waiter;
        this.waiter = undefined;
        resolve(message);
      } else {
        this.received.push(message);
      }
    }
  }

  /// The byte size of the first whole message in `pending`, once its segment table is in.
  private frameSize(): number | undefined {
    if (this.pending.length < 4) return undefined;
    const segments = this.pending.readUInt32LE(0) + 1;
    const table = 4 + 4 * segments;
    const header = table + (table % 8);  // the table is padded to a whole word
    if (this.pending.length < table) return undefined;
    let words = 0;
    for (let i = 0; i < segments; i++) words += this.pending.readUInt32LE(4 + 4 * i);
    return header + words * 8;
  }

  private end(why: Error): void {
    if (this.ended) return;
    this.ended = true;
    this.waiter?.reject();
    this.waiter = undefined;
    this.onLost(why);
  }
}

/// A scheduler's ClientService, and how to leave it.
export interface Connection {
  service: ClientService$Client;
  /// Settles `call` as it settles, or rejects with Unreachable if the connection ends first
  /// (capnp-es leaves the questions of a lost connection unanswered).
  call<T>(call: Promise<T>): Promise<T>;
  close(): void;
}

/// Connects to the scheduler at `host`:`port` and presents the cluster's `token` (empty when the
/// cluster has none). Rejects with Unreachable, or Refused for a wrong token.
export async function connect(host: string, port: number, token: string): Promise<Connection> {
  const socket = net.connect({ host, port });
  socket.setNoDelay(true);
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", (e) => reject(new Unreachable(`cannot reach the scheduler at ${host}:${port}: ${e.message}`)));
  });
  let lostWith: ((why: Error) => void) | undefined;
  const lost = new Promise<never>((_, reject) => (lostWith = reject));
  lost.catch(() => {});  // observed through call()
  const conn = new capnp.Conn(new SocketTransport(socket, (why) => lostWith?.(why)));
  conn.onError = (e) => lostWith?.(new Unreachable(`the connection failed: ${String(e)}`));
  const call = <T>(p: Promise<T>) => Promise.race([p, lost]);

  const gateway = conn.bootstrap(Gateway);
  // capnp-es names its Client class's capability field `client`, which hides the generated
  // method of Gateway.client: the call is made from the method's descriptor instead.
  const raw = (gateway as unknown as { client: capnp.Client }).client;
  const answer = raw.call({
    method: Gateway$Client.methods[0],
    paramsFunc: (params) => {
      params.token = token;
    },
  });
  const handshake = new Gateway_Client$Results$Promise(new capnp.Pipeline(Gateway_Client$Results, answer));
  try {
    check(await call(handshake.promise()));
  } catch (e) {
    conn.shutdown();
    throw e;
  }
  return { service: handshake.getClient(), call, close: () => conn.shutdown() };
}
