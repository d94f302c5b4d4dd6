-- Token bucket (and the leaky-bucket meter, its dual): twin of src/core/token-bucket.ts.
-- State 'dd': [deficit in token·ms/window units, time of the last change].
local function tb_deficit_at(p, s, at)
  local refilled = s[1] - (at - s[2]) * p.limit
  if refilled > 0 then return refilled end
  return 0
end

local function tb_idle(p, s)
  if s[1] > 0 then return s[2] + s[1] / p.limit end
  return -INF
end

local tb = {
  init = function(p) p.buf = {}; p.n = 2; p.fmt = 'dd'; p.full = p.burst * p.windowMs end,
  load = function(p, key) return slab_load(key, 2, 'dd', p.buf) end,
  evaluate = function(p, s, now, cost, v)
    local at = s[2]
    if now > at then at = now end -- a clock that steps back never refills twice
    local deficit = tb_deficit_at(p, s, at)
    local after = deficit + cost * p.windowMs
    v.delay = 0
    if after <= p.full then
      v.allowed = true
      v.remaining = floor((p.full - after) / p.windowMs)
      v.reset = ceil_ms(after / p.limit)
      v.retry = 0
      v.next[1] = after
      v.next[2] = at
    else
      v.allowed = false
      v.remaining = max(0, floor((p.full - deficit) / p.windowMs))
      v.reset = ceil_ms(deficit / p.limit)
      v.retry = retry_ms((after - p.full) / p.limit)
    end
  end,
  commit = function(p, key, s, now, cost, lease, v)
    slab_save(key, v.next, 2, 'dd', tb_idle(p, v.next), now)
  end,
  adjust = function(p, key, s, now, delta)
    local at = s[2]
    if now > at then at = now end
    s[1] = max(0, tb_deficit_at(p, s, at) + delta * p.windowMs)
    s[2] = at
    slab_save(key, s, 2, 'dd', tb_idle(p, s), now)
  end,
}
ALG['token-bucket'] = tb
ALG['leaky-meter'] = tb
