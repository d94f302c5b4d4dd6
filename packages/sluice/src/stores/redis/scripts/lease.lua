-- sluice lease: grants a node a chunk of a fixed window's global budget (the 'lease' strategy, after
-- YouTube's Doorman). The node then admits locally until the chunk is spent, its lease TTL passes or the
-- window ends (src/distributed/lease.ts).
-- The script is the only writer of the budget, and it never grants beyond the limit, so the requests
-- admitted in a window can never exceed it, whatever the nodes do or however they die.
--
-- KEYS[1]: a hash for one key's budget: w = window index, g = granted in window w, and per node:
--          n:<node> = granted to it in window w and not given back (the most it may give back),
--          d:<node> = its latest stated demand, e:<node> = when its lease ends (now + ttl at its last call).
--          The hash is dropped when a new window begins, so everything in it belongs to this window.
-- ARGV: node id, limit, windowMs, want (the node's demand for the next chunk), unspent (tokens it gives
--       back), lease window (the window they came from), ttlMs, time ms or ''.
-- Reply: { granted, window index, ms until the window ends }.
--
-- When a lease's TTL passes, its node can no longer spend it (the node stops a margin before, by its own
-- clock), so the lease is settled: its demand leaves the proportional split, and the remainder of the
-- budget is shared among the nodes still holding leases. What the node did not spend comes back when it
-- says so (a live node gives back its expired remainder at once). A crashed node cannot say: its chunk
-- stays counted as granted, because it may have spent all of it before it died, and returning any of it
-- could let the window admit more than the limit. That chunk is the most a crash costs the window.
local key, node = KEYS[1], ARGV[1]
local limit, windowMs = tonumber(ARGV[2]), tonumber(ARGV[3])
local want, unspent, leaseWindow, ttl = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local now = now_ms(ARGV[8])
local w, stored = window_at(key, now, windowMs)
if stored ~= w then
  -- A new window: every earlier chunk has ended with it.
  redis.call('DEL', key)
  redis.call('HSET', key, 'w', w, 'g', 0)
end
local granted = tonumber(redis.call('HGET', key, 'g')) or 0
local held = tonumber(redis.call('HGET', key, 'n:' .. node)) or 0
if leaseWindow == w and unspent > 0 then
  -- Only what this node still holds can come back, so a confused node cannot mint budget.
  local back = math.min(unspent, held)
  granted = granted - back
  held = held - back
end
-- Settle the leases whose TTL has passed (see above), then state this node's demand for one TTL.
local fields = redis.call('HGETALL', key)
for i = 1, #fields, 2 do
  local f = fields[i]
  if string.sub(f, 1, 2) == 'e:' and tonumber(fields[i + 1]) <= now then
    local id = string.sub(f, 3)
    redis.call('HDEL', key, f, 'd:' .. id)
  end
end
redis.call('HSET', key, 'd:' .. node, want, 'e:' .. node, now + ttl)
-- Proportional share: what is left, split by the demand of every node holding a live lease.
local total = 0
fields = redis.call('HGETALL', key)
for i = 1, #fields, 2 do
  if string.sub(fields[i], 1, 2) == 'd:' then total = total + tonumber(fields[i + 1]) end
end
local left = limit - granted
local grant = 0
if left > 0 and want > 0 then
  grant = math.floor(left * want / total)
  if grant < 1 then grant = 1 end -- a small node still makes progress
  if grant > want then grant = want end
  if grant > left then grant = left end
end
granted = granted + grant
redis.call('HSET', key, 'g', granted, 'n:' .. node, held + grant)
local ends = (w + 1) * windowMs
-- Relative, so a client clock (tests) that is not Redis's own still gets the intended lifetime.
redis.call('PEXPIRE', key, ends - now + 1000)
return { grant, w, ends - now }
