-- Fixed window: twin of src/core/fixed-window.ts. State 'dd': [window index, count in that window].
-- `now`, or the start of the stored window if the clock stepped back before it: it never reopens a window.
local function fw_at(p, s, now)
  local start = s[1] * p.windowMs
  if now > start then return now end
  return start
end

ALG['fixed-window'] = {
  init = function(p) p.buf = {}; p.n = 2; p.layout = 'dd' end,
  evaluate = function(p, s, now, cost, v)
    local at = fw_at(p, s, now)
    local index = floor(at / p.windowMs)
    local count = 0
    if s[1] == index then count = s[2] end
    local endsIn = (index + 1) * p.windowMs - at
    local after = count + cost
    v.allowed = after <= p.limit
    v.delay = 0
    if v.allowed then
      v.remaining = p.limit - after
      if after > 0 then v.reset = ceil_ms(endsIn) else v.reset = 0 end
      v.retry = 0
      v.next[1] = index
      v.next[2] = after
    else
      v.remaining = max(0, p.limit - count)
      if count > 0 then v.reset = ceil_ms(endsIn) else v.reset = 0 end
      v.retry = retry_ms(endsIn)
    end
  end,
  adjust = function(p, s, now, delta)
    local index = floor(fw_at(p, s, now) / p.windowMs)
    local count = 0
    if s[1] == index then count = s[2] end
    s[1] = index
    s[2] = max(0, count + delta)
  end,
  idle = function(p, s)
    if s[2] > 0 then return (s[1] + 1) * p.windowMs end
    return -INF
  end,
}
