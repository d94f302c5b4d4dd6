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
 * connections are kept in the order they went idle.
 */
import { ipKey } from 'sluice/kit';

export interface ConnectionCaps {
  /** Open connections at most. */
  readonly maxConnections: number;
  /** Open connections from one address (IPv6: one /64) at most. */
  readonly maxConnectionsPerAddress: number;
}

interface Entry<C> {
  readonly conn: C;
  readonly from: AddressConnections<C>;
  /** Requests (HTTP) or calls (gRPC) in flight; idle at 0. */
  busy: number;
  /** No request yet. */
  fresh: boolean;
}

interface AddressConnections<C> {
  readonly address: string;
  count: number;
  /** This address's idle connections that have served a request, longest idle first. */
  readonly idle: Map<C, Entry<C>>;
  /** This address's connections that have not sent a request yet, oldest first. */
  readonly fresh: Map<C, Entry<C>>;
}

export class ConnectionTable<C> {
  private readonly entries = new Map<C, Entry<C>>();
  /** Every idle connection, longest idle first (a Map iterates in insertion order). */
  private readonly idle = new Map<C, Entry<C>>();
  /** Every connection that has not sent a request yet, oldest first. */
  private readonly fresh = new Map<C, Entry<C>>();
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
      this.addresses.set(address, (from = { address, count: 0, idle: new Map(), fresh: new Map() }));
    const entry: Entry<C> = { conn, from, busy: 0, fresh: true };
    from.count++;
    this.entries.set(conn, entry);
    this.fresh.set(conn, entry);
    from.fresh.set(conn, entry);
    return true;
  }

  /** A request or call began on `conn`: it is not idle until every one has ended. */
  busy(conn: C): void {
    const e = this.entries.get(conn);
    if (e === undefined || e.busy++ > 0) return;
    if (e.fresh) {
      e.fresh = false;
      this.fresh.delete(conn);
      e.from.fresh.delete(conn);
    } else {
      this.idle.delete(conn);
      e.from.idle.delete(conn);
    }
  }

  /** A request or call on `conn` ended; with none left it is idle from now (the newest idle). */
  done(conn: C): void {
    const e = this.entries.get(conn);
    if (e === undefined || e.busy === 0 || --e.busy > 0) return;
    this.idle.set(conn, e);
    e.from.idle.set(conn, e);
  }

  /** `conn` closed (or is closing): it no longer counts. */
  remove(conn: C): void {
    const e = this.entries.get(conn);
    if (e === undefined) return;
    this.entries.delete(conn);
    this.idle.delete(conn);
    e.from.idle.delete(conn);
    this.fresh.delete(conn);
    e.from.fresh.delete(conn);
    if (--e.from.count === 0) this.addresses.delete(e.from.address);
  }

  /** Connections open from the address `remoteAddress` (by its key: IPv6 by /64). */
  countFrom(remoteAddress: string): number {
    return this.addresses.get(ipKey(remoteAddress))?.count ?? 0;
  }

  private closeFirst(idle: Map<C, Entry<C>>): boolean {
    const first = idle.keys().next();
    if (first.done === true) return false;
    this.remove(first.value);
    this.evicted++;
    this.close(first.value);
    return true;
  }

  private refuse(): false {
    this.refused++;
    return false;
  }
}
