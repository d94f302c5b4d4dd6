/**
 * Reading a unary call's one message: its bytes gathered until the client ends its side, within a deadline
 * and within the server's budget for calls still arriving, then unframed (the 5-byte prefix checked) and
 * inflated. A call that never finishes its message is DEADLINE_EXCEEDED; one past the budget is
 * RESOURCE_EXHAUSTED; either is then reset, so that nothing of it stays in memory.
 */
import http2 from 'node:http2';
import { gunzipSync, inflateSync } from 'node:zlib';
import { ipKey, monotonicClock } from 'sluice/kit';
import { fail, GrpcStatus } from './grpc-answer.js';
import { Line } from './line.js';
import type { Linked } from './line.js';

export class GrpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** A call whose message has not arrived whole, as its connection's share holds it: shed() ends it at once. */
interface HeldCall {
  /** Its bytes so far. */
  readonly size: number;
  /** Ends it (RESOURCE_EXHAUSTED, reset), saying why, and releases it. */
  shed(why: string): void;
}

/** A connection, as the budget reads it: an HTTP/2 session, whose socket gives the client's address. */
type Connection = object & { readonly socket?: { readonly remoteAddress?: string | undefined } | undefined };

/** One connection's pending calls, oldest first, and their bytes. */
interface Holder {
  readonly address: string;
  readonly calls: Set<HeldCall>;
  bytes: number;
}

/** One address's pending calls (IPv6: one /64), their bytes, and its connections that hold any. */
interface AddressHolders {
  calls: number;
  bytes: number;
  readonly holders: Set<Holder>;
}

const SHED_FOR_CALLS =
  "the server gave this call's place to another connection's: this connection holds the most calls whose message has not arrived; retry";
const SHED_FOR_BYTES =
  "the server gave this call's bytes to another connection's: this connection holds the most bytes of calls whose message has not arrived; retry";

/**
 * What the calls whose message has not arrived whole hold: at most `maxCalls` of them across every
 * connection, `perAddress` from one client address, `perConnection` on one connection, and `maxBytes` of
 * their bytes, `perAddressBytes` from one address. Each costs a few KB beyond its bytes (its stream, its
 * session's bookkeeping in nghttp2), so 200,000 held forever once cost 621 MB.
 *
 * A call over its connection's share is refused. At the address's or the total cap, the connection holding
 * the most in that scope gives up its oldest call (RESOURCE_EXHAUSTED, reset) to admit the newcomer,
 * unless it holds at most one more than the newcomer's own: one client filling the pool cannot refuse
 * another's first call (issue 45, finding 1: 4,100 such calls over 5 connections once refused 97 % of a
 * legitimate client's). The bytes are shared the same way: past the address's byte share, its connection
 * holding the most bytes gives up its largest call, unless that is the arriving call's own connection (or
 * holds no more); past the total, so does the fullest connection of the address holding the most bytes,
 * unless that is the arriving call's own address (or holds no more). A client trickling large messages
 * from one address cannot starve another address's calls of bytes. The scans for the fullest run only at
 * a cap, over the connections (or addresses) that hold any.
 */
export class PendingCalls {
  calls = 0;
  bytes = 0;
  /** Calls shed to make room for another connection's. */
  shed = 0;
  private readonly byConnection = new WeakMap<Connection, Holder>();
  /** Connections holding at least one call. */
  private readonly holders = new Set<Holder>();
  private readonly addresses = new Map<string, AddressHolders>();

  constructor(
    readonly maxCalls: number,
    readonly maxBytes: number,
    readonly perConnection: number = maxCalls,
    readonly perAddress: number = maxCalls,
    readonly perAddressBytes: number = maxBytes,
  ) {}

  /**
   * Takes `call` of `connection` in, shedding a fuller connection's oldest call if a cap is reached; or
   * says why not (the call is then not taken).
   */
  admit(connection: Connection, call: HeldCall): string | undefined {
    let holder = this.byConnection.get(connection);
    if (holder === undefined) {
      const remote = connection.socket?.remoteAddress; // read once per connection: session.socket is a Proxy
      this.byConnection.set(
        connection,
        (holder = { address: remote === undefined ? '' : ipKey(remote), calls: new Set(), bytes: 0 }),
      );
    }
    const mine = holder.calls.size;
    if (mine >= this.perConnection)
      return `this connection already holds ${this.perConnection} calls whose message has not arrived (--grpc-max-pending-calls-per-connection); retry`;
    const address = this.addresses.get(holder.address);
    if (address !== undefined && address.calls >= this.perAddress && !this.shedFullest(address.holders, mine)) {
      return `this client address already holds ${this.perAddress} calls whose message has not arrived (--grpc-max-pending-calls-per-address); retry`;
    }
    if (this.calls >= this.maxCalls && !this.shedFullest(this.holders, mine)) {
      return `the server already holds ${this.maxCalls} calls whose message has not arrived (--grpc-max-pending-calls); retry`;
    }
    if (holder.calls.size === 0) {
      this.holders.add(holder);
      let a = this.addresses.get(holder.address);
      if (a === undefined) this.addresses.set(holder.address, (a = { calls: 0, bytes: 0, holders: new Set() }));
      a.holders.add(holder);
    }
    holder.calls.add(call);
    this.addresses.get(holder.address)!.calls++;
    this.calls++;
    return undefined;
  }

  /** `call` of `connection` ended, or arrived whole: it and its bytes no longer count. */
  release(connection: Connection, call: HeldCall): void {
    const holder = this.byConnection.get(connection);
    if (holder === undefined || !holder.calls.delete(call)) return;
    this.calls--;
    this.bytes -= call.size;
    holder.bytes -= call.size;
    const address = this.addresses.get(holder.address)!;
    address.calls--;
    address.bytes -= call.size;
    if (holder.calls.size > 0) return;
    this.holders.delete(holder);
    address.holders.delete(holder);
    if (address.holders.size === 0) this.addresses.delete(holder.address);
  }

  /**
   * `bytes` more of `call` (of `connection`, admitted and not released) arrived: counted, shedding fuller
   * connections' calls while a byte cap is passed; or says why not (the caller then ends `call`, whose
   * bytes release() takes back).
   */
  grow(connection: Connection, call: HeldCall & { size: number }, bytes: number): string | undefined {
    call.size += bytes;
    // Only a call admitted and not yet released grows (readMessage listens to no other).
    const holder = this.byConnection.get(connection);
    if (holder === undefined) return undefined;
    const address = this.addresses.get(holder.address)!;
    holder.bytes += bytes;
    address.bytes += bytes;
    this.bytes += bytes;
    while (address.bytes > this.perAddressBytes) {
      const fullest = fullestByBytes(address.holders);
      if (fullest === holder || fullest.bytes <= holder.bytes)
        return `this client address's calls whose message has not arrived hold more than ${this.perAddressBytes} bytes (--grpc-max-pending-bytes-per-address); retry`;
      this.shedLargest(fullest);
    }
    while (this.bytes > this.maxBytes) {
      let fullest: AddressHolders | undefined;
      for (const a of this.addresses.values()) if (fullest === undefined || a.bytes > fullest.bytes) fullest = a;
      if (fullest === address || fullest!.bytes <= address.bytes)
        return `the calls whose message has not arrived hold more than ${this.maxBytes} bytes (--grpc-max-pending-bytes); retry`;
      this.shedLargest(fullestByBytes(fullest!.holders));
    }
    return undefined;
  }

  /** Sheds the oldest call of the fullest of `holders` if it holds at least two more than `mine`. */
  private shedFullest(holders: Set<Holder>, mine: number): boolean {
    let fullest: Holder | undefined;
    for (const h of holders) if (fullest === undefined || h.calls.size > fullest.calls.size) fullest = h;
    if (fullest === undefined || fullest.calls.size <= mine + 1) return false;
    this.shed++;
    fullest.calls.values().next().value!.shed(SHED_FOR_CALLS); // releases it
    return true;
  }

  /** Sheds the call of `holder` that holds the most bytes (it holds some: it is the fullest of a scope over its cap). */
  private shedLargest(holder: Holder): void {
    let largest: HeldCall | undefined;
    for (const c of holder.calls) if (largest === undefined || c.size > largest.size) largest = c;
    this.shed++;
    largest!.shed(SHED_FOR_BYTES); // releases it
  }
}

/** The connection of `holders` (not empty) whose calls hold the most bytes. */
function fullestByBytes(holders: Set<Holder>): Holder {
  let fullest: Holder | undefined;
  for (const h of holders) if (fullest === undefined || h.bytes > fullest.bytes) fullest = h;
  return fullest!;
}

export interface MessageLimits {
  /** The largest message, as sent and once inflated (--max-body-bytes). */
  readonly maxMessageBytes: number;
  /** The whole message must have arrived within this of the call's start (--request-timeout-ms); 0: no bound. */
  readonly messageTimeoutMs: number;
  readonly pending: PendingCalls;
}

/** Where the message goes once it arrived whole and unframed, with the call's stream and grpc-timeout. */
export type MessageDone = (message: Buffer, stream: http2.ServerHttp2Stream, deadlineMs: number | undefined) => void;

/** Stops the client sending the rest of a call already answered: RST_STREAM with NO_ERROR, as gRPC allows. */
function cut(stream: http2.ServerHttp2Stream): void {
  if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_NO_ERROR);
}

/**
 * A call whose message is arriving: its bytes so far and what to do with them. The stream's listeners are
 * functions shared by every call, which find this on the stream, so a call allocates no closures of its own;
 * its deadline is its place in Deadlines' list, not a timer of its own.
 */
class Arriving implements HeldCall, Linked<Arriving> {
  settled = false;
  first: Buffer | undefined = undefined;
  more: Buffer[] | undefined = undefined;
  size = 0;
  /** When its message must have arrived (monotonicClock), while in `deadlines`' line. */
  dueAt = 0;
  deadlines: Deadlines | undefined = undefined;
  line: Line<Arriving> | undefined = undefined;
  prev: Arriving | undefined = undefined;
  next: Arriving | undefined = undefined;
  constructor(
    readonly connection: Connection,
    readonly stream: http2.ServerHttp2Stream,
    readonly encoding: string,
    readonly limits: MessageLimits,
    readonly done: MessageDone,
    readonly deadlineMs: number | undefined,
  ) {}

  /** Done with: it and its bytes leave the budget, and its deadline goes. */
  settle(): void {
    this.settled = true;
    this.limits.pending.release(this.connection, this);
    this.first = this.more = undefined;
    this.deadlines?.remove(this);
  }

  /** Ends the call at once, its place (or its bytes) given to another connection's (PendingCalls at a cap). */
  shed(why: string): void {
    if (this.settled) return;
    this.settle();
    fail(this.stream, GrpcStatus.RESOURCE_EXHAUSTED, why);
    cut(this.stream);
  }
}

/**
 * The calls whose message is arriving, oldest first, under one timeout: one timer, for the oldest, instead
 * of a Timeout per call armed and cleared within a tick or two for nearly every call (its object, its async
 * id, the timer list's clock read and the event loop's ref count, on every call). As Node's own timer lists
 * do it: the timer, once it fires, times out every call due and is set again for the oldest left.
 */
class Deadlines {
  /** The calls, oldest first. */
  private readonly calls = new Line<Arriving>();
  private timer: ReturnType<typeof setTimeout> | undefined = undefined;
  /** The call the timer was set for: due when it fires, whatever the clock says (mocked timers move none). */
  private armedFor: Arriving | undefined = undefined;

  constructor(readonly timeoutMs: number) {}

  add(call: Arriving): void {
    call.deadlines = this;
    call.dueAt = monotonicClock() + this.timeoutMs;
    this.calls.add(call);
    if (this.timer === undefined) this.arm(call, this.timeoutMs);
  }

  remove(call: Arriving): void {
    if (call.deadlines !== this) return;
    call.deadlines = undefined;
    this.calls.delete(call);
    // Nothing left to time: the timer goes, and the next call sets it afresh for itself.
    if (this.calls.first === undefined && this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = this.armedFor = undefined;
    }
  }

  private arm(call: Arriving, ms: number): void {
    this.armedFor = call;
    this.timer = setTimeout(onDeadline, ms, this);
    this.timer.unref();
  }

  /** The timer fired: the calls due are timed out (each leaves the list as it settles), and it is set again. */
  fire(): void {
    this.timer = undefined;
    const now = monotonicClock();
    for (let call = this.calls.first; call !== undefined; call = this.calls.first) {
      if (call !== this.armedFor && call.dueAt > now) {
        this.arm(call, Math.max(1, Math.ceil(call.dueAt - now)));
        return;
      }
      onMessageTimeout(call);
      if (this.calls.first === call) this.remove(call); // settled before without leaving: never, but never loop
    }
    this.armedFor = undefined;
  }
}

function onDeadline(deadlines: Deadlines): void {
  deadlines.fire();
}

/** The Deadlines of each timeout in use (one in a server: its --request-timeout-ms). */
const deadlinesByTimeout = new Map<number, Deadlines>();
let lastDeadlines: Deadlines | undefined;

function deadlinesOf(timeoutMs: number): Deadlines {
  if (lastDeadlines?.timeoutMs === timeoutMs) return lastDeadlines;
  let d = deadlinesByTimeout.get(timeoutMs);
  if (d === undefined) deadlinesByTimeout.set(timeoutMs, (d = new Deadlines(timeoutMs)));
  return (lastDeadlines = d);
}

const ARRIVING = Symbol('sluice.arriving');
type ArrivingStream = http2.ServerHttp2Stream & { [ARRIVING]?: Arriving };

function onMessageTimeout(call: Arriving): void {
  if (call.settled) return;
  call.settle();
  fail(
    call.stream,
    GrpcStatus.DEADLINE_EXCEEDED,
    `the call's message did not arrive whole within ${call.limits.messageTimeoutMs} ms (--request-timeout-ms)`,
  );
  cut(call.stream);
}

function onClose(this: ArrivingStream): void {
  const call = this[ARRIVING]!;
  if (!call.settled) call.settle();
}

function onData(this: ArrivingStream, chunk: Buffer): void {
  const call = this[ARRIVING]!;
  if (call.settled) return;
  const { maxMessageBytes, pending } = call.limits;
  if (call.size + chunk.length > maxMessageBytes + 5) {
    call.settle();
    fail(
      this,
      GrpcStatus.RESOURCE_EXHAUSTED,
      `the message is larger than the limit of ${maxMessageBytes} bytes (--max-body-bytes)`,
    );
    return cut(this);
  }
  const overBudget = pending.grow(call.connection, call, chunk.length);
  if (overBudget !== undefined) {
    call.settle();
    fail(this, GrpcStatus.RESOURCE_EXHAUSTED, overBudget);
    return cut(this);
  }
  if (call.first === undefined) call.first = chunk;
  else (call.more ??= [call.first]).push(chunk);
}

function onEnd(this: ArrivingStream): void {
  const call = this[ARRIVING]!;
  if (call.settled) return;
  const bytes = call.more !== undefined ? Buffer.concat(call.more) : (call.first ?? Buffer.alloc(0));
  call.settle();
  let message: Buffer;
  try {
    message = unframe(bytes, call.encoding, call.limits.maxMessageBytes);
  } catch (e) {
    if (e instanceof GrpcError) return fail(this, e.code, e.message);
    throw e;
  }
  call.done(message, this, call.deadlineMs);
}

/**
 * Gathers a call's message and hands it to `done` (with the stream and `deadlineMs`), or fails the call.
 * Most calls arrive in one DATA frame: the first chunk is kept as it is, and concatenated only if more come.
 */
export function readMessage(
  stream: http2.ServerHttp2Stream,
  encoding: string,
  limits: MessageLimits,
  done: MessageDone,
  deadlineMs?: number,
): void {
  // A fake stream in the unit tests has no session: it is then a connection of its own.
  const connection: Connection = stream.session ?? stream;
  const call = new Arriving(connection, stream, encoding, limits, done, deadlineMs);
  const refused = limits.pending.admit(connection, call);
  if (refused !== undefined) {
    fail(stream, GrpcStatus.RESOURCE_EXHAUSTED, refused);
    return cut(stream);
  }
  (stream as ArrivingStream)[ARRIVING] = call;
  if (limits.messageTimeoutMs > 0) deadlinesOf(limits.messageTimeoutMs).add(call);
  // 'close' comes once: `on`, not `once`, which would wrap the listener in a closure of its own.
  stream.on('close', onClose);
  stream.on('data', onData);
  stream.on('end', onEnd);
}

/** The one message of a unary call: its 5-byte prefix (compressed flag, length) checked, and inflated. */
export function unframe(bytes: Buffer, encoding: string, max: number): Buffer {
  if (bytes.length === 0) throw new GrpcError(GrpcStatus.INVALID_ARGUMENT, 'the call carried no RateLimitRequest');
  if (bytes.length < 5)
    throw new GrpcError(GrpcStatus.INVALID_ARGUMENT, `the message prefix is cut short: ${bytes.length} of 5 bytes`);
  const flag = bytes[0]!;
  const length = bytes.readUInt32BE(1);
  if (length > max)
    throw new GrpcError(
      GrpcStatus.RESOURCE_EXHAUSTED,
      `the message is larger than the limit of ${max} bytes (--max-body-bytes)`,
    );
  if (5 + length > bytes.length)
    throw new GrpcError(
      GrpcStatus.INVALID_ARGUMENT,
      `the message is cut short: ${bytes.length - 5} of ${length} bytes`,
    );
  if (5 + length < bytes.length)
    throw new GrpcError(
      GrpcStatus.INVALID_ARGUMENT,
      'a ShouldRateLimit call carries exactly one message; this one carried more',
    );
  const message = bytes.subarray(5);
  if (flag === 0) return message;
  if (flag !== 1)
    throw new GrpcError(GrpcStatus.INVALID_ARGUMENT, `the message's compressed flag is ${flag}, not 0 or 1`);
  // The client's mistake, not the server's: INVALID_ARGUMENT, not INTERNAL.
  if (encoding === 'identity')
    throw new GrpcError(
      GrpcStatus.INVALID_ARGUMENT,
      'the message is marked compressed but the call has no grpc-encoding',
    );
  try {
    // maxOutputLength: a small compressed message must not inflate past the limit (a zip bomb).
    return encoding === 'gzip'
      ? gunzipSync(message, { maxOutputLength: max })
      : inflateSync(message, { maxOutputLength: max });
  } catch (e) {
    if (e instanceof RangeError)
      throw new GrpcError(
        GrpcStatus.RESOURCE_EXHAUSTED,
        `the message inflates past the limit of ${max} bytes (--max-body-bytes)`,
      );
    throw new GrpcError(
      GrpcStatus.INVALID_ARGUMENT,
      `the ${encoding} message does not inflate: ${(e as Error).message}`,
    );
  }
}

const TIMEOUT_UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 };

/** The last grpc-timeout read and its value: an Envoy sends the same one (its filter's timeout) on every call. */
let lastTimeout: string | undefined;
let lastTimeoutMs: number | undefined;

/** `grpc-timeout` (at most 8 digits and a unit) in milliseconds, at least 1; undefined when absent or malformed. */
export function timeoutMs(value: string | string[] | undefined): number | undefined {
  if (typeof value !== 'string') return undefined;
  if (value === lastTimeout) return lastTimeoutMs;
  const m = /^(\d{1,8})([HMSmun])$/.exec(value);
  const ms = m === null ? undefined : Math.max(1, Math.ceil(Number(m[1]) * TIMEOUT_UNIT_MS[m[2]!]!));
  lastTimeout = value;
  lastTimeoutMs = ms;
  return ms;
}
