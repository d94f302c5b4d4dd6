-- Token bucket (and the leaky-bucket meter, its dual): twin of src/core/token-bucket.ts.
-- State 'dd': [deficit in token·ms/window units, time of the last change].
local function tb_deficit_at(p, s, at)
  local refilled = s[1] - (at - s[2]) * p.limit
  if refilled > 0 then return refilled end
  return 0
end

local tb = {
  init = function(p) p.buf = {}; p.n = 2; p.layout = 'dd'; p.full = p.burst * p.windowMs end,
  -- The hottest code of the store: locals and the refill inlined (it is tb_deficit_at) save table reads
  -- and a call per decision.
  evaluate = function(p, s, now, cost, v)
    local limit, windowMs, full = p.limit, p.windowMs, p.full
    local at = s[2]
    if now > at then at = now end -- a clock that steps back never refills twice
    local deficit = s[1] - (at - s[2]) * limit
    if deficit < 0 then deficit = 0 end
    local after = deficit + cost * windowMs
    v.delay = 0
    if after <= full then
      v.allowed = true
      v.remaining = floor((full - after) / windowMs)
      v.reset = ceil_ms(after / limit)
      v.retry = 0
      local nx = v.next
      nx[1] = after
      nx[2] = at
    else
      v.allowed = false
      v.remaining = max(0, floor((full - deficit) / windowMs))
      v.reset = ceil_ms(deficit / limit)
      v.retry = retry_ms((after - full) / limit)
    end
  end,
  adjust = function(p, s, now, delta)
    local at = s[2]
    if now > at then at = now end
    s[1] = max(0, tb_deficit_at(p, s, at) + delta * p.windowMs)
    s[2] = at
  end,
  idle = function(p, s)
    if s[1] > 0 then return s[2] + s[1] / p.limit end
    return -INF
  end,
}
ALG['token-bucket'] = tb
ALG['leaky-meter'] = tb

-- A call with a per-call limit (twin of RescaledTokenBucket in src/core/token-bucket.ts): the deficit
-- stays in the units of the policy's own limit, p.unit, and this limit reads it as the time to full.
ALG['token-bucket-rescaled'] = {
  init = function(p) p.buf = {}; p.n = 2; p.layout = 'dd'; p.full = p.burst * p.windowMs end,
  evaluate = function(p, s, now, cost, v)
    local at = s[2]
    if now > at then at = now end
    local stored = s[1] - (at - s[2]) * p.unit
    local deficit = 0
    if stored > 0 then deficit = (stored * p.limit) / p.unit end
    local after = deficit + cost * p.windowMs
    local full, w = p.full, p.windowMs
    v.delay = 0
    if after <= full then
      v.allowed = true
      v.remaining = floor((full - after) / w)
      v.reset = ceil_ms(after / p.limit)
      v.retry = 0
      v.next[1] = (after * p.unit) / p.limit
      v.next[2] = at
    else
      v.allowed = false
      v.remaining = max(0, floor((full - deficit) / w))
      v.reset = ceil_ms(deficit / p.limit)
      v.retry = retry_ms((after - full) / p.limit)
    end
  end,
  adjust = function(p, s, now, delta) error('sluice internal: a per-call limit does not adjust') end,
  idle = function(p, s)
    if s[1] > 0 then return s[2] + s[1] / p.unit end
    return -INF
  end,
}
