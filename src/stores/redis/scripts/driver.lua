-- sluice driver: runs a batch of operations, in order, for one table's policies. Each operation touches
-- the keys of one identity (one hash tag), and the whole batch is one script call, so it is atomic.
--
-- KEYS: per operation, one key per policy.
-- ARGV: [1] '1' when operations carry client times (tests), else '0' (Redis TIME);
--       [2] number of policies; then per policy: algorithm, limit, windowMs, burst, delay, subWindows;
--       then per operation: code ('d' decide, 'a' adjust, 'r' release, 'x' reset), cost or delta, lease id, time.
-- Reply: flat integers. Per decide or adjust: per policy allowed, remaining, resetAfterMs, retryAfterMs,
--        delayMs. Per release: 1 if the lease was held. Per reset: 0.
local clientTime = ARGV[1] == '1'
if clientTime then GRACE = 60000 end -- client and Redis clocks run apart: keep state a while longer
local np = tonumber(ARGV[2])
local P = {}
local a = 3
for i = 1, np do
  local alg = ALG[ARGV[a]]
  if not alg then return redis.error_reply('ERR sluice: unknown algorithm ' .. tostring(ARGV[a])) end
  local p = { alg = alg, limit = tonumber(ARGV[a + 1]), windowMs = tonumber(ARGV[a + 2]),
              burst = tonumber(ARGV[a + 3]), delay = tonumber(ARGV[a + 4]), sub = tonumber(ARGV[a + 5]) }
  alg.init(p)
  P[i] = p
  a = a + 6
end

local serverNow
local function time_of(t)
  if clientTime then return tonumber(t) end
  if not serverNow then
    local tt = redis.call('TIME')
    serverNow = tonumber(tt[1]) * 1000 + math.floor(tonumber(tt[2]) / 1000) -- whole ms keep the buckets exact
  end
  return serverNow
end

local V, ST = {}, {}
for i = 1, np do V[i] = { next = {} } end
local out, n = {}, 0

local function decide(k, now, cost, lease)
  local all = true
  for i = 1, np do
    local p = P[i]
    local st = p.alg.load(p, KEYS[k + i])
    ST[i] = st
    p.alg.evaluate(p, st, now, cost, V[i])
    if not V[i].allowed then all = false end
  end
  if all and cost > 0 then
    for i = 1, np do P[i].alg.commit(P[i], KEYS[k + i], ST[i], now, cost, lease, V[i]) end
  end
  for i = 1, np do
    local v = V[i]
    if v.allowed then out[n + 1] = 1 else out[n + 1] = 0 end
    out[n + 2] = v.remaining
    out[n + 3] = v.reset
    out[n + 4] = v.retry
    out[n + 5] = v.delay
    n = n + 5
  end
end

local k = 0
while a <= #ARGV do
  local code, arg, lease = ARGV[a], tonumber(ARGV[a + 1]), ARGV[a + 2]
  local now = time_of(ARGV[a + 3])
  a = a + 4
  if code == 'd' then
    decide(k, now, arg, lease)
  elseif code == 'a' then
    if arg ~= 0 then
      for i = 1, np do
        local p = P[i]
        p.alg.adjust(p, KEYS[k + i], p.alg.load(p, KEYS[k + i]), now, arg)
      end
    end
    decide(k, now, 0, '')
  elseif code == 'r' then
    local held = 0
    for i = 1, np do
      local p = P[i]
      if p.alg.release and p.alg.release(p, KEYS[k + i], lease, now) then held = 1 end
    end
    n = n + 1
    out[n] = held
  else
    for i = 1, np do redis.call('DEL', KEYS[k + i]) end
    n = n + 1
    out[n] = 0
  end
  k = k + np
end
return out
