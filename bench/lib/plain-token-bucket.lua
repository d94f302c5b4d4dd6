-- A token bucket as it is usually written for Redis (the redis-benchmark peer of bench/redis.mjs): state in a
-- hash, Redis time, and a write only on an admission. KEYS[1] the bucket; ARGV capacity, tokens per ms, cost.
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local s = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(s[1]) or capacity
local ts = tonumber(s[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - ts) * rate)
if tokens < cost then
  return { 0, math.floor(tokens) }
end
tokens = tokens - cost
redis.call('HSET', KEYS[1], 'tokens', tokens, 'ts', now)
redis.call('PEXPIRE', KEYS[1], math.ceil((capacity - tokens) / rate))
return { 1, math.floor(tokens) }
