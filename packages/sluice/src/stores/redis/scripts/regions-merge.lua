-- sluice regions, merge: a peer region's counts, pushed into this Redis (the 'regions' strategy,
-- src/distributed/regions/). Each count is the sender region's whole count of a key in a window, so the
-- merge is a max per (window, region): idempotent and order-free, unlike adding deltas. A push that is
-- repeated, reordered or replayed after a partition never counts anything twice.
-- KEYS[1]: the hash of when each peer region was last heard from (field region = this Redis's time ms);
-- KEYS[2..]: the keys' G-counter hashes (regions-decide.lua). On a Cluster, where a call's keys share
-- one slot, a push carries no stamp: KEYS are then the G-counters alone (one slot's), and the stamp goes
-- in a call of its own. ARGV tells which: one (window, count) pair per G-counter.
-- ARGV: the sender region, windowMs, time ms or '', then per G-counter: window index, count.
-- Reply: this Redis's time ms. A push of no counts is the sender's heartbeat.
local region, windowMs = ARGV[1], tonumber(ARGV[2])
local now = now_ms(ARGV[3])
local stamp = #ARGV == 2 * #KEYS + 1
if stamp then
  redis.call('HSET', KEYS[1], region, now)
  redis.call('PEXPIRE', KEYS[1], 86400000)
end
-- ARGV[at + 2 * i], ARGV[at + 2 * i + 1]: KEYS[i]'s window and count.
local first, at = 2, 0
if not stamp then first, at = 1, 2 end
local w = math.floor(now / windowMs)
for i = first, #KEYS do
  local kw, count = tonumber(ARGV[at + 2 * i]), tonumber(ARGV[at + 2 * i + 1])
  -- A window that ended before the last one limits nothing any more.
  if kw >= w - 1 then
    local field = kw .. ':' .. region
    local current = tonumber(redis.call('HGET', KEYS[i], field)) or 0
    if count > current then redis.call('HSET', KEYS[i], field, count) end
    local ttl = (kw + 1) * windowMs - now + windowMs + 1000
    if redis.call('PTTL', KEYS[i]) < ttl then redis.call('PEXPIRE', KEYS[i], ttl) end
  end
end
return now
