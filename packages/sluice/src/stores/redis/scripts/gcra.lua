-- GCRA: twin of src/core/gcra.ts. The leaky-bucket shaper (leaky-shaper.lua) builds on it.
-- State 'd': [TAT]. Differences below 16 ulps of TAT, and never above 1/1024 of a request, count as
-- ties, exactly as in TypeScript.
local TIE = 2 ^ -48

local function gcra_evaluate(p, s, now, cost, v)
  local tat = s[1]
  local base = now
  if tat > now then base = tat end
  local ahead = (base - now) * p.limit
  local after = ahead + cost * p.windowMs
  local tie = base * TIE * p.limit
  if tie > p.tokenTie then tie = p.tokenTie end
  local room = p.full + tie
  v.delay = 0
  if after <= room then
    v.allowed = true
    v.remaining = floor((room - after) / p.windowMs)
    v.reset = ceil_ms(after / p.limit)
    v.retry = 0
    v.next[1] = base + (cost * p.windowMs) / p.limit
  else
    v.allowed = false
    v.remaining = max(0, floor((room - ahead) / p.windowMs))
    v.reset = ceil_ms(ahead / p.limit)
    v.retry = retry_ms((after - p.full) / p.limit)
  end
end

local gcra = {
  init = function(p) p.buf = {}; p.n = 1; p.layout = 'd'; p.full = p.burst * p.windowMs; p.tokenTie = p.windowMs / 1024 end,
  evaluate = gcra_evaluate,
  adjust = function(p, s, now, delta)
    local base = now
    if s[1] > now then base = s[1] end
    s[1] = max(now, base + (delta * p.windowMs) / p.limit)
  end,
  idle = function(p, s) return s[1] end,
}
ALG['gcra'] = gcra
