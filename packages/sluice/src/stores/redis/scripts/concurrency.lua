-- Concurrency: twin of src/core/concurrency.ts. State: a hash from lease id to (expiry, cost) packed 'dd'.
-- A lease that is never released expires after `window`, and expired leases are dropped on every admit.
local function conc_load(p, key)
  local flat = redis.call('HGETALL', key)
  local st = { ids = {}, exp = {}, costs = {}, n = 0 }
  for i = 1, #flat, 2 do
    local e, c = struct.unpack('dd', flat[i + 1])
    st.n = st.n + 1
    st.ids[st.n] = flat[i]
    st.exp[st.n] = e
    st.costs[st.n] = c
  end
  return st
end

local function conc_last_expiry(st, now)
  local last = -INF
  for i = 1, st.n do
    local t = st.exp[i]
    if t > now and t > last then last = t end
  end
  return last
end

-- `now`, or the time the newest lease was taken if the clock stepped back before it: no lease is stamped
-- earlier (and so expires sooner) than one already held. Compared as expiries, as the core does.
local function conc_at(p, st, now)
  local newest = -INF
  for i = 1, st.n do if st.exp[i] > newest then newest = st.exp[i] end end
  if now + p.windowMs >= newest then return now end
  return newest - p.windowMs
end

ALG['concurrency'] = {
  init = function(p) end,
  load = conc_load,
  evaluate = function(p, st, now, cost, v)
    now = conc_at(p, st, now)
    local held = 0
    for i = 1, st.n do if st.exp[i] > now then held = held + st.costs[i] end end
    v.delay = 0
    if held + cost <= p.limit then
      v.allowed = true
      v.remaining = p.limit - held - cost
      v.retry = 0
      if cost > 0 then v.reset = p.windowMs else v.reset = ceil_ms(conc_last_expiry(st, now) - now) end
      return
    end
    v.allowed = false
    v.remaining = max(0, p.limit - held)
    v.reset = ceil_ms(conc_last_expiry(st, now) - now)
    -- Without a release, room appears as leases time out: walk them in expiry order.
    local live = {}
    for i = 1, st.n do if st.exp[i] > now then live[#live + 1] = { st.exp[i], st.costs[i] } end end
    table.sort(live, function(a, b) return a[1] < b[1] end)
    local freed, at = 0, now
    for _, l in ipairs(live) do
      if held - freed + cost <= p.limit then break end
      freed = freed + l[2]
      at = l[1]
    end
    v.retry = retry_ms(at - now)
  end,
  commit = function(p, key, st, now, cost, lease, v)
    local at = conc_at(p, st, now)
    local dead = {}
    for i = 1, st.n do if st.exp[i] <= at then dead[#dead + 1] = st.ids[i] end end
    if #dead > 0 then redis.call('HDEL', key, unpack(dead)) end
    redis.call('HSET', key, lease, struct.pack('dd', at + p.windowMs, cost))
    -- The newest lease is the last to expire; the TTL runs on the caller's clock, which may be behind it.
    redis.call('PEXPIRE', key, ceil(at - now) + p.windowMs + GRACE)
  end,
  -- Leases are ended by release(), not by cost adjustments: penalty and reward leave them alone.
  adjust = function(p, key, st, now, delta) end,
  release = function(p, key, lease, now)
    local raw = redis.call('HGET', key, lease)
    if not raw then return false end
    local e = struct.unpack('dd', raw)
    redis.call('HDEL', key, lease)
    return e > now
  end,
}
