/**
 * A first-in, first-out list linked through its members: adding, taking out and reading the first are O(1)
 * and allocate nothing, where a Map or Set deletes and inserts (and rehashes every few dozen) on paths every
 * request takes. A member carries its own links, so it is in at most one Line through them.
 */
export interface Linked<T extends Linked<T>> {
  /** The Line it is in, if any. */
  line: Line<T> | undefined;
  prev: T | undefined;
  next: T | undefined;
}

export class Line<T extends Linked<T>> {
  first: T | undefined = undefined;
  private last: T | undefined = undefined;

  /** Appends `l`, which is in no line. */
  add(l: T): void {
    l.line = this;
    l.prev = this.last;
    l.next = undefined;
    if (this.last === undefined) this.first = l;
    else this.last.next = l;
    this.last = l;
  }

  /** Takes `l` out, if it is in this line. */
  delete(l: T): void {
    if (l.line !== this) return;
    if (l.prev === undefined) this.first = l.next;
    else l.prev.next = l.next;
    if (l.next === undefined) this.last = l.prev;
    else l.next.prev = l.prev;
    l.line = l.prev = l.next = undefined;
  }
}
