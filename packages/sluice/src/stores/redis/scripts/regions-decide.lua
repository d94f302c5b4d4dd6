-- sluice regions, decide: fixed-window decisions in this region's home Redis against the merged
-- per-region counts of each key (the 'regions' strategy, src/distributed/regions/), several per call,
-- in order (a key named twice sees its first decision).
-- KEYS[i]: a hash of the key's G-counter: field '<window>:<region>' = what <region> admitted in that window
--          (this region's own field is written here; the others' by their merges, regions-merge.lua),
--          field 'w' = the latest window a decision cleaned up to.
-- ARGV: this region, windowMs, limit, time ms or '', the number of peers P, then P pairs (peer region,
--       floor): a peer counts as max(its merged count, floor); the floor is its share of the limit while
--       it is cut off (no news for partitionAfterMs), else 0; then per key: cost (0: peek), and '1' to
--       charge the cost without a check (a penalty) else '0'.
-- Reply: per key, { this region's count, the peers' counts (floors applied), window index, ms until it
--        ends, 1 if the cost was admitted else 0 }, flattened.
local region, windowMs, limit = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local now = now_ms(ARGV[4])
local peers = tonumber(ARGV[5])
local w = math.floor(now / windowMs)
local ends = (w + 1) * windowMs
local mine = w .. ':' .. region
local reply = {}
for k = 1, #KEYS do
  local key = KEYS[k]
  local cost, force = tonumber(ARGV[5 + 2 * peers + 2 * k - 1]), ARGV[5 + 2 * peers + 2 * k]
  local stored = tonumber(redis.call('HGET', key, 'w'))
  if stored ~= w then
    -- A new window here: drop the fields of windows before it (a peer's clock may run a little ahead, so
    -- a later window's fields stay).
    if stored ~= nil then
      local fields = redis.call('HKEYS', key)
      for i = 1, #fields do
        local fw = tonumber(string.match(fields[i], '^(%-?%d+):'))
        if fw ~= nil and fw < w then redis.call('HDEL', key, fields[i]) end
      end
    end
    redis.call('HSET', key, 'w', w)
  end
  local own = tonumber(redis.call('HGET', key, mine)) or 0
  local others = 0
  for i = 6, 5 + 2 * peers, 2 do
    local c = tonumber(redis.call('HGET', key, w .. ':' .. ARGV[i])) or 0
    local floor = tonumber(ARGV[i + 1])
    if c < floor then c = floor end
    others = others + c
  end
  local admitted = 0
  if cost > 0 and (force == '1' or own + others + cost <= limit) then
    own = redis.call('HINCRBY', key, mine, cost)
    admitted = 1
  end
  redis.call('PEXPIRE', key, ends - now + windowMs + 1000)
  local n = #reply
  reply[n + 1], reply[n + 2], reply[n + 3], reply[n + 4], reply[n + 5] = own, others, w, ends - now, admitted
end
return reply
