-- Sliding-window log: twin of src/core/sliding-log.ts. State: one string of (time, cost) pairs packed as
-- 'dd', oldest first, requests in the same millisecond merged. Every write drops the entries that have
-- left the window, so a key holds at most `limit` entries (16 bytes each); a decision costs O(entries).
-- Writes the log at once (it is not batched like fixed-size state), with a TTL until it is idle.
local function save_packed(key, packed, idle, now)
  if idle <= now then
    LOGS[key] = false
    redis.call('DEL', key)
  else
    LOGS[key] = packed
    redis.call('SET', key, packed, 'PX', fmt('%d', ceil(idle - now) + GRACE))
  end
end

-- A banning policy's log starts with a header pair: [ban end, bans counted] (block.lua).
-- The log at KEYS[ki] as of this operation: written earlier in the batch (LOGS), reset in it (SEEN), read
-- with the batch's other keys before any write (VALS: the driver's MGET, or its GETs across slots), or GET.
local function log_load(p, key, ki)
  local raw = LOGS[key]
  if raw == nil then
    local at = SEEN[key]
    if at then raw = VALS[at] else raw = VALS[ki] end
    if raw == nil then raw = redis.call('GET', key) end
  end
  if not raw or #raw % 16 ~= 0 then return nil end
  local st = { times = {}, costs = {}, sum = 0, ban_e = 0, ban_c = 0, raw = raw }
  local pos, n = 1, 0
  if p.block then
    if #raw == 0 then return nil end
    st.ban_e, st.ban_c, pos = struct.unpack('dd', raw, 1)
  end
  while pos <= #raw do
    local t, c
    t, c, pos = struct.unpack('dd', raw, pos)
    n = n + 1
    st.times[n] = t
    st.costs[n] = c
    st.sum = st.sum + c
  end
  st.n = n
  return st
end

-- `now`, or the newest entry's time if the clock stepped back before it: the log stays sorted, and no
-- entry is stamped earlier (and so ages out sooner) than one already logged.
local function log_at(st, now)
  if st.n == 0 or now >= st.times[st.n] then return now end
  return st.times[st.n]
end

-- Index of the first entry still inside the window, and the sum of the entries before it.
local function log_first_live(p, st, now)
  local cutoff = now - p.windowMs
  local i, expired = 1, 0
  while i <= st.n and st.times[i] <= cutoff do
    expired = expired + st.costs[i]
    i = i + 1
  end
  return i, expired
end

-- Keeps only the live entries.
local function log_prune(p, st, now)
  local first, expired = log_first_live(p, st, now)
  if first == 1 then return end
  local times, costs, n = {}, {}, 0
  for i = first, st.n do
    n = n + 1
    times[n] = st.times[i]
    costs[n] = st.costs[i]
  end
  st.times, st.costs, st.n, st.sum = times, costs, n, st.sum - expired
end

local function log_save(p, key, st, now)
  local idle = -INF
  if st.n > 0 then idle = st.times[st.n] + p.windowMs end
  local parts = {}
  if p.block then
    local e, c = st.ban_e or 0, st.ban_c or 0
    local b = ban_idle(p.block, e, c)
    if b > idle then idle = b end
    parts[1] = struct.pack('dd', e, c)
  end
  if idle <= now then
    LOGS[key] = false
    redis.call('DEL', key)
    return
  end
  for i = 1, st.n do parts[#parts + 1] = struct.pack('dd', st.times[i], st.costs[i]) end
  save_packed(key, table.concat(parts), idle, now)
end

-- A commit to a log as it was read (no ban header): the live entries' bytes as they are, and the new
-- entry appended (or the newest rewritten, for a request in its millisecond), instead of every entry
-- packed again from the tables it was read into: the write copies the log's bytes, where it packed each.
local function log_append(p, key, st, now, cost)
  local at = log_at(st, now)
  local first = log_first_live(p, st, at)
  local raw, entry = st.raw, nil
  local keep = 16 * (first - 1) + 1
  if first <= st.n and st.times[st.n] == at then
    entry = struct.pack('dd', at, st.costs[st.n] + cost)
    raw = string.sub(raw, keep, -17)
  else
    entry = struct.pack('dd', at, cost)
    if keep > 1 then raw = string.sub(raw, keep) end
  end
  save_packed(key, raw .. entry, at + p.windowMs, now)
end

local function log_commit(p, key, st, now, cost)
  if st and st.raw and not p.block then return log_append(p, key, st, now, cost) end
  st = st or { times = {}, costs = {}, sum = 0, n = 0 }
  local raw = now
  now = log_at(st, now)
  log_prune(p, st, now)
  if st.n > 0 and st.times[st.n] == now then
    st.costs[st.n] = st.costs[st.n] + cost
  else
    st.n = st.n + 1
    st.times[st.n] = now
    st.costs[st.n] = cost
  end
  st.sum = st.sum + cost
  log_save(p, key, st, raw)
end

local function log_evaluate(p, st, now, cost, v)
    v.delay = 0
    if st == nil then
      v.allowed = cost <= p.limit
      v.remaining = p.limit - cost
      if cost > 0 then v.reset = p.windowMs else v.reset = 0 end
      v.retry = 0
      return
    end
    now = log_at(st, now)
    local first, expired = log_first_live(p, st, now)
    local live = st.sum - expired
    local newest = -INF
    if first <= st.n then newest = st.times[st.n] end
    if live + cost <= p.limit then
      v.allowed = true
      v.remaining = p.limit - live - cost
      if cost > 0 then v.reset = p.windowMs else v.reset = ceil_ms(newest + p.windowMs - now) end
      v.retry = 0
      return
    end
    v.allowed = false
    v.remaining = max(0, p.limit - live)
    v.reset = ceil_ms(newest + p.windowMs - now)
    -- Entry i leaves the window at times[i] + W; find the first whose leaving makes room.
    local freed, i = 0, first
    while live - freed + cost > p.limit do
      freed = freed + st.costs[i]
      i = i + 1
    end
    v.retry = retry_ms(st.times[i - 1] + p.windowMs - now)
end

ALG['sliding-log'] = {
  init = function(p) end,
  load = log_load,
  evaluate = function(p, st, now, cost, v)
    if not p.block then return log_evaluate(p, st, now, cost, v) end
    v.bans = false
    local e = 0
    if st then e = st.ban_e end
    if now < e then
      v.reset = 0
      banned(v, now, e)
      return
    end
    v.blocked = false
    log_evaluate(p, st, now, cost, v)
    if v.allowed or cost == 0 then return end
    local ms = 0
    if st then ms = ban_length(p.block, ban_remembered(p.block, st.ban_c, st.ban_e, now)) else ms = ban_length(p.block, 0) end
    v.bans = true
    start_ban(v, now, ms)
  end,
  ban = function(p, key, st, now, v)
    st = st or { times = {}, costs = {}, sum = 0, n = 0, ban_e = 0, ban_c = 0 }
    local ms, count = ban_length(p.block, ban_remembered(p.block, st.ban_c, st.ban_e, now))
    st.ban_e, st.ban_c = now + ms, count
    log_save(p, key, st, now)
  end,
  commit = function(p, key, st, now, cost, lease, v) log_commit(p, key, st, now, cost) end,
  adjust = function(p, key, st, now, delta)
    if delta > 0 then return log_commit(p, key, st, now, delta) end
    if st == nil then return end
    log_prune(p, st, log_at(st, now))
    local refund = -delta -- newest first
    while refund > 0 and st.n > 0 do
      local take = min(st.costs[st.n], refund)
      st.costs[st.n] = st.costs[st.n] - take
      st.sum = st.sum - take
      refund = refund - take
      if st.costs[st.n] == 0 then
        st.times[st.n] = nil
        st.costs[st.n] = nil
        st.n = st.n - 1
      end
    end
    log_save(p, key, st, now)
  end,
}
