-- Sliding-window counter with k sub-windows: twin of src/core/sliding-window.ts.
-- State k + 2 doubles: [index of the newest sub-window written, then a ring of k + 1 counters].
-- Lua arrays start at 1, so the TypeScript slot o + 1 + (i % ring) is s[2 + i % ring] here.
local function sw_count(p, s, newest, i)
  if i > newest or i < newest - p.k or i < 0 then return 0 end
  return s[2 + (i % p.ring)]
end

local function sw_newest_nonzero(p, s)
  local newest = s[1]
  local i = newest
  while i >= newest - p.k and i >= 0 do
    if sw_count(p, s, newest, i) > 0 then return i end
    i = i - 1
  end
  return -1
end

local function sw_scaled_estimate(p, s, newest, j, elapsed)
  local full = 0
  for i = j - p.k + 1, j do full = full + sw_count(p, s, newest, i) end
  return full * p.w + sw_count(p, s, newest, j - p.k) * (p.w - elapsed)
end

-- Copies s into out, moved forward so that sub-window j is the newest.
local function sw_advance(p, s, j, out)
  local newest = s[1]
  out[1] = j
  for r = 0, p.ring - 1 do out[2 + r] = s[2 + r] end
  for i = max(newest + 1, j - p.k), j do out[2 + (i % p.ring)] = 0 end
end

local function sw_passes_at(p, s, newest, j, elapsed, cost)
  for step = j, j + p.k + 1 do
    local from = 0
    if step == j then from = elapsed end
    local full = 0
    for i = step - p.k + 1, step do full = full + sw_count(p, s, newest, i) end
    local room = p.limit - cost - full
    if room >= 0 then
      local old = sw_count(p, s, newest, step - p.k)
      local e = from
      if old ~= 0 then e = max(from, p.w - (room * p.w) / old) end
      if e < p.w then return step * p.w + e end
    end
  end
  return (j + p.k + 1) * p.w
end

ALG['sliding-window'] = {
  init = function(p)
    p.k = p.sub
    p.w = p.windowMs / p.sub
    p.ring = p.k + 1
    p.n = p.k + 2
    p.layout = string.rep('d', p.n)
    p.buf = {}
  end,
  evaluate = function(p, s, now, cost, v)
    local newest = s[1]
    local j = floor(now / p.w)
    local elapsed = now - j * p.w
    if j < newest then
      j = newest -- the clock stepped back: stay in the newest sub-window written
      elapsed = 0
    end
    local estimate = sw_scaled_estimate(p, s, newest, j, elapsed)
    local capacity = p.limit * p.w
    local after = estimate + cost * p.w
    v.delay = 0
    if after <= capacity then
      v.allowed = true
      v.remaining = floor((capacity - after) / p.w)
      v.retry = 0
      sw_advance(p, s, j, v.next)
      local slot = 2 + (j % p.ring)
      v.next[slot] = v.next[slot] + cost
      local last = j
      if cost <= 0 then last = sw_newest_nonzero(p, v.next) end
      if last < 0 then v.reset = 0 else v.reset = ceil_ms((last + p.k + 1) * p.w - now) end
    else
      v.allowed = false
      v.remaining = max(0, floor((capacity - estimate) / p.w))
      local last = sw_newest_nonzero(p, s)
      if last < 0 then v.reset = 0 else v.reset = ceil_ms((last + p.k + 1) * p.w - now) end
      v.retry = retry_ms(sw_passes_at(p, s, newest, j, elapsed, cost) - now)
    end
  end,
  adjust = function(p, s, now, delta)
    local j = max(floor(now / p.w), s[1])
    local nx = {}
    sw_advance(p, s, j, nx)
    if delta >= 0 then
      local slot = 2 + (j % p.ring)
      nx[slot] = nx[slot] + delta
    else
      local refund = -delta -- newest first, as the most recent requests are the ones being refunded
      local i = j
      while i >= j - p.k and i >= 0 and refund > 0 do
        local slot = 2 + (i % p.ring)
        local take = min(nx[slot], refund)
        nx[slot] = nx[slot] - take
        refund = refund - take
        i = i - 1
      end
    end
    for i = 1, p.n do s[i] = nx[i] end
  end,
  idle = function(p, s)
    local last = sw_newest_nonzero(p, s)
    if last < 0 then return -INF end
    return (last + p.k + 1) * p.w
  end,
}
