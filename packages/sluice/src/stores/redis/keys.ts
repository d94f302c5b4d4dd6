/**
 * Key layout: `<prefix>:{<id>}:<policy>`, one per policy; a table of several fixed-size policies without
 * bans keeps their states in one key, `<prefix>:{<id>}:<policy>+<policy>...` (scripts.ts combinesStates).
 * The identity sits in a hash tag, so every key of one identity lands in one cluster slot and a
 * multi-policy script never fails with CROSSSLOT.
 */

const NEEDS_ESCAPE = /[{}\\]/;

/**
 * Makes an id safe inside a hash tag. Ids without '{', '}' or '\' are kept as they are (the common case,
 * and readable in redis-cli); the others have those three characters escaped as '\(', '\)' and '\\'.
 * Escaped ids always contain a backslash and plain ones never do, so the mapping is one-to-one.
 */
export function escapeId(id: string): string {
  if (!NEEDS_ESCAPE.test(id)) return id;
  return id.replace(/[{}\\]/g, (c) => (c === '{' ? '\\(' : c === '}' ? '\\)' : '\\\\'));
}

export function keyOf(prefix: string, escapedId: string, policy: string): string {
  return `${prefix}:{${escapedId}}:${policy}`;
}

const TABLE = (() => {
  const t = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i << 8;
    for (let j = 0; j < 8; j++) c = c & 0x8000 ? ((c << 1) ^ 0x1021) & 0xffff : (c << 1) & 0xffff;
    t[i] = c;
  }
  return t;
})();

/** The cluster slot of a hash tag's content: CRC16-XMODEM of its UTF-8 bytes, mod 16384. */
export function slotOf(escapedId: string): number {
  const bytes = Buffer.from(escapedId, 'utf8');
  let crc = 0;
  for (let i = 0; i < bytes.length; i++) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ bytes[i]!) & 0xff]!;
  return crc & 16383;
}
