-- sluice local-sync: adds a node's locally admitted count to a key's fixed-window count, optionally decides
-- one more request exactly, and answers the global count (the 'local-sync' strategy, after Kong's
-- sync_rate and Bucket4j's delaying; src/distributed/local-sync.ts).
-- KEYS[1]: a hash: w = window index, c = count admitted in window w by every node, n = nodes heard from in
--          window w, p = nodes heard from in window w - 1, s:<node> = present once <node> was heard in w.
-- ARGV: node id, count to add (already admitted locally: added unconditionally), windowMs, the window it
--       was admitted in (-1 if none), cost to decide here (0: none), limit, time ms or ''.
-- Reply: { global count in the current window, current window index, ms until it ends,
--          1 if the cost was admitted here else 0, nodes estimate = max(n, p) }.
-- A count from an earlier window is dropped: that window is over, it limits nothing any more.
-- The cost decided here is admitted only if it fits: near the limit a node decides every request this way,
-- which is exact (src/distributed/local-sync.ts, "the bound").
local key, node = KEYS[1], ARGV[1]
local add, windowMs, from = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local cost, limit = tonumber(ARGV[5]), tonumber(ARGV[6])
local now = now_ms(ARGV[7])
local w, stored = window_at(key, now, windowMs)
if stored ~= w then
  -- A new window: keep only how many nodes the last one heard from (the estimate until they sync again).
  local previous = 0
  if stored == w - 1 then previous = tonumber(redis.call('HGET', key, 'n')) or 0 end
  redis.call('DEL', key)
  redis.call('HSET', key, 'w', w, 'c', 0, 'n', 0, 'p', previous)
end
local count = tonumber(redis.call('HGET', key, 'c')) or 0
if from == w then count = count + add end
if redis.call('HSETNX', key, 's:' .. node, 1) == 1 then redis.call('HINCRBY', key, 'n', 1) end
local admitted = 0
if cost > 0 and count + cost <= limit then
  count = count + cost
  admitted = 1
end
redis.call('HSET', key, 'c', count)
local heard = tonumber(redis.call('HGET', key, 'n')) or 1
local previous = tonumber(redis.call('HGET', key, 'p')) or 0
local ends = (w + 1) * windowMs
-- Relative, so a client clock (tests) that is not Redis's own still gets the intended lifetime. It lasts
-- one more window so that window starts with this one's count of nodes.
redis.call('PEXPIRE', key, ends - now + windowMs + 1000)
return { count, w, ends - now, admitted, math.max(heard, previous) }
