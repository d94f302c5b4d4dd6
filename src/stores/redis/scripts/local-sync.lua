-- sluice local-sync: adds a node's locally admitted count to a key's fixed-window count and answers the
-- global count (the 'local-sync' strategy, after Kong's sync_rate and Bucket4j's delaying).
-- KEYS[1]: a hash: w = window index, c = count admitted in window w by every node.
-- ARGV: count to add, windowMs, the window it was admitted in (-1 if none), time ms or ''.
-- Reply: { global count in the current window, current window index, ms until it ends }.
-- A count from an earlier window is dropped: that window is over, it limits nothing any more.
local key = KEYS[1]
local add, windowMs, from = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local now = now_ms(ARGV[4])
local w = math.floor(now / windowMs)
local stored = tonumber(redis.call('HGET', key, 'w'))
local count = 0
if stored == w then count = tonumber(redis.call('HGET', key, 'c')) or 0 end
if from == w then count = count + add end
local ends = (w + 1) * windowMs
redis.call('HSET', key, 'w', w, 'c', count)
-- Relative, so a client clock (tests) that is not Redis's own still gets the intended lifetime.
redis.call('PEXPIRE', key, ends - now + 1000)
return { count, w, ends - now }
