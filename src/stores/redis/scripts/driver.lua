-- sluice driver: runs a batch of operations, in order, for one table's policies. Each operation touches
-- the keys of one identity (one hash tag), and the whole batch is one script call, so it is atomic.
--
-- The table's policies come before this file as constants (P, CLIENT_TIME, LEASES), so that a call carries
-- only its operations: fewer arguments are a measurable part of a call's cost at one call in flight.
-- KEYS: per operation, one key per policy.
-- ARGV: per operation, the cost of a decision as a plain number (the common case, parsed with one
--       call), or '<code><number>': 'a' adjust (delta), 'r' release, 'x' reset;
--       then its lease id if LEASES, then its time in ms if CLIENT_TIME.
-- Reply: flat integers; every one costs Redis time to send, so the common case is short. Per decide or
--        adjust, per policy: allowed and undelayed: remaining + 1, resetAfterMs; denied: -(remaining + 1),
--        resetAfterMs, retryAfterMs; allowed with a delay: 0, remaining, resetAfterMs, delayMs.
--        Per release: 1 if the lease was held. Per reset: 0.
if CLIENT_TIME then GRACE = 60000 end -- client and Redis clocks run apart: keep state a while longer
local np = #P
local slabOnly = true
for i = 1, np do
  P[i].alg.init(P[i])
  if not P[i].n then slabOnly = false end
end
-- One MGET for the whole batch (bounded, as Lua's unpack is).
if slabOnly and #KEYS > 0 and #KEYS <= 4000 then
  local vals = redis.call('MGET', unpack(KEYS))
  for i = 1, #KEYS do CACHE[KEYS[i]] = vals[i] end
end

local serverNow
local function time_of()
  if not serverNow then
    local tt = redis.call('TIME')
    serverNow = tonumber(tt[1]) * 1000 + floor(tonumber(tt[2]) / 1000) -- whole ms keep the buckets exact
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
    if not v.allowed then
      out[n + 1] = -(v.remaining + 1)
      out[n + 2] = v.reset
      out[n + 3] = v.retry
      n = n + 3
    elseif v.delay ~= 0 then
      out[n + 1] = 0
      out[n + 2] = v.remaining
      out[n + 3] = v.reset
      out[n + 4] = v.delay
      n = n + 4
    else
      out[n + 1] = v.remaining + 1
      out[n + 2] = v.reset
      n = n + 2
    end
  end
end

local k, a = 0, 1
while a <= #ARGV do
  local op = ARGV[a]
  local code, arg = 'd', tonumber(op)
  if not arg then code, arg = string.sub(op, 1, 1), tonumber(string.sub(op, 2)) end
  a = a + 1
  local lease = ''
  if LEASES then
    lease = ARGV[a]
    a = a + 1
  end
  local now
  if CLIENT_TIME then
    now = tonumber(ARGV[a])
    a = a + 1
  else
    now = time_of()
  end
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
    for i = 1, np do
      -- Delete now, whatever the type, and forget any cached or pending state.
      local key = KEYS[k + i]
      redis.call('DEL', key)
      CACHE[key] = false
      if PACKED[key] ~= nil then PACKED[key] = false end
    end
    n = n + 1
    out[n] = 0
  end
  k = k + np
end
flush_writes()
return out
