-- Fixed window: twin of src/core/fixed-window.ts. State 'dd': [window index, count in that window].
ALG['fixed-window'] = {
  init = function(p) p.buf = {}; p.n = 2; p.layout = 'dd' end,
  evaluate = function(p, s, now, cost, v)
    local index = floor(now / p.windowMs)
    local endsIn = (index + 1) * p.windowMs - now
    if index < s[1] then
      index = s[1] -- the clock stepped back: stand still at the start of the stored window
      endsIn = p.windowMs
    end
    local count = 0
    if s[1] == index then count = s[2] end
    local after = count + cost
    v.allowed = after <= p.limit
    v.delay = 0
    if p.countRejected then
      -- Envoy's counting: a denial of the key writes this count too (driver.lua's BANS path)
      v.bans = true
      v.next[1] = index
      v.next[2] = after
    end
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
    local index = max(floor(now / p.windowMs), s[1])
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
