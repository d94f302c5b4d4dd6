/**
 * The connections one listener holds (HTTP sockets, gRPC sessions), under its cap (--max-connections) and
 * each client address's share of it (--max-connections-per-address; IPv6 by /64, as core/ip.ts keys it).
 *
 * At either cap a new connection is admitted by closing the longest-idle one (of the listener, or of that
 * address), as nginx's ngx_drain_connections makes room: an idle crowd cannot refuse a newcomer. A
 * connection with a request in flight is never closed for a newcomer's sake; when every one is busy, the
 * newcomer is refused. An idle connection that has served a request (a pool's spare) goes before one that
 * has not sent its first yet: that one was opened to send it, and under a stream of newcomers it would
 * otherwise be the longest idle before its first request is read. Every step is O(1): the idle
 * connections are kept in the order they went idle, in lists linked through the entries (Line), not Maps:
 * a request makes its connection busy and idle again, and as Maps that was four deletions and insertions per
 * request, with a rehash into a new table every few dozen (the table, live when a scavenge came, was promoted).
 */
import { ipKey } from 'sluice/kit';
import { Line } from './line.js';
import type { Linked } from './line.js';

export interface ConnectionCaps {
  /** Open connections at most. */
  readonly maxConnections: number;
  /** Open connections from one address (IPv6: one /64) at most. */
  readonly maxConnectionsPerAddress: number;
}

class Entry<C> {
  /** Requests (HTTP) or calls (gRPC) in flight; idle at 0. */
  busy = 0;
  /** No request yet. */
  fresh = true;
  /** Out of the table (closed, or closed to make room): its requests no longer count. */
  gone = false;
  /** Its place in the listener's idle or fresh line, and in its address's. */
  readonly inAll: Link<C> = link(this);
  readonly inAddress: Link<C> = link(this);

  constructor(
    readonly conn: C,
    readonly from: AddressConnections<C>,
  ) {}
}

interface AddressConnections<C> {
  readonly address: string;
  count: number;
  /** This address's idle connections that have served a request, longest idle first. */
  readonly idle: Line<Link<C>>;
  /** This address's connections that have not sent a request yet, oldest first. */
  readonly fresh: Line<Link<C>>;
}

/** An entry's place in one Line: each entry has two (the listener's and its address's), made once. */
interface Link<C> extends Linked<Link<C>> {
  readonly entry: Entry<C>;
}

function link<C>(entry: Entry<C>): Link<C> {
  return { entry, line: undefined, prev: undefined, next: undefined };
}

/**
 * A connection's place in the table, as admitSeat() gives it: a caller that keeps it beside the connection
 * marks requests on it without a lookup by connection (busySeat, doneSeat).
 */
export type Seat<C> = Entry<C>;

export class ConnectionTable<C> {
  private readonly entries = new Map<C, Entry<C>>();
  /** Every idle connection, longest idle first. */
  private readonly idle = new Line<Link<C>>();
  /** Every connection that has not sent a request yet, oldest first. */
  private readonly fresh = new Line<Link<C>>();
  private readonly addresses = new Map<string, AddressConnections<C>>();
  /** Idle connections closed to admit a newcomer. */
  evicted = 0;
  /** Newcomers refused: every connection they could replace was busy. */
  refused = 0;

  /** `close` ends a connection chosen to make room; it is out of the table before `close` is called. */
  constructor(
    private readonly caps: ConnectionCaps,
    private readonly close: (conn: C) => void,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /**
   * Takes `conn` in, idle, closing the longest-idle connection first if a cap is reached; false (and `conn`
   * not taken) when there is none to close: the caller then closes `conn`.
   */
  admit(conn: C, remoteAddress: string | undefined): boolean {
    return this.admitSeat(conn, remoteAddress) !== undefined;
  }

  /** admit(), giving the connection's seat; undefined when it was not taken. */
  admitSeat(conn: C, remoteAddress: string | undefined): Seat<C> | undefined {
    const address = remoteAddress === undefined ? '' : ipKey(remoteAddress);
    let from = this.addresses.get(address);
    // The address's own longest-idle first: one client at its share makes room among its own connections.
    if (from !== undefined && from.count >= this.caps.maxConnectionsPerAddress) {
      if (!this.closeFirst(from.idle) && !this.closeFirst(from.fresh)) return this.refuse();
    } else if (this.entries.size >= this.caps.maxConnections) {
      if (!this.closeFirst(this.idle) && !this.closeFirst(this.fresh)) return this.refuse();
    }
    // Closing the address's last other connection may have forgotten the address: look it up again.
    from = this.addresses.get(address);
    if (from === undefined)
      this.addresses.set(address, (from = { address, count: 0, idle: new Line(), fresh: new Line() }));
    const entry = new Entry(conn, from);
    from.count++;
    this.entries.set(conn, entry);
    this.fresh.add(entry.inAll);
    from.fresh.add(entry.inAddress);
    return entry;
  }

  /** A request or call began on `conn`: it is not idle until every one has ended. */
  busy(conn: C): void {
    const e = this.entries.get(conn);
    if (e !== undefined) this.busySeat(e);
  }

  /** busy() for the connection in `e`. */
  busySeat(e: Seat<C>): void {
    if (e.gone || e.busy++ > 0) return;
    if (e.fresh) {
      e.fresh = false;
      this.fresh.delete(e.inAll);
      e.from.fresh.delete(e.inAddress);
    } else {
      this.idle.delete(e.inAll);
      e.from.idle.delete(e.inAddress);
    }
  }

  /** A request or call on `conn` ended; with none left it is idle from now (the newest idle). */
  done(conn: C): void {
    const e = this.entries.get(conn);
    if (e !== undefined) this.doneSeat(e);
  }

  /** done() for the connection in `e`. */
  doneSeat(e: Seat<C>): void {
    if (e.gone || e.busy === 0 || --e.busy > 0) return;
    this.idle.add(e.inAll);
    e.from.idle.add(e.inAddress);
  }

  /** `conn` closed (or is closing): it no longer counts. */
  remove(conn: C): void {
    const e = this.entries.get(conn);
    if (e === undefined) return;
    e.gone = true;
    this.entries.delete(conn);
    this.idle.delete(e.inAll);
    e.from.idle.delete(e.inAddress);
    this.fresh.delete(e.inAll);
    e.from.fresh.delete(e.inAddress);
    if (--e.from.count === 0) this.addresses.delete(e.from.address);
  }

  /** Connections open from the address `remoteAddress` (by its key: IPv6 by /64). */
  countFrom(remoteAddress: string): number {
    return this.addresses.get(ipKey(remoteAddress))?.count ?? 0;
  }

  private closeFirst(line: Line<Link<C>>): boolean {
    const first = line.first;
    if (first === undefined) return false;
    const conn = first.entry.conn;
    this.remove(conn);
    this.evicted++;
    this.close(conn);
    return true;
  }

  private refuse(): undefined {
    this.refused++;
    return undefined;
  }
}
