-- Leaky-bucket shaper: twin of LeakyBucketShaper in src/core/leaky-bucket.ts. Loaded after gcra.lua.
ALG['leaky-shaper'] = {
  init = function(p)
    gcra.init(p)
    -- p.delay == 0 encodes nodelay: everything is forwarded at once.
    if p.delay == 0 then p.undelayed = INF else p.undelayed = (p.delay - 1) * p.windowMs end
  end,
  evaluate = function(p, s, now, cost, v)
    gcra_evaluate(p, s, now, cost, v)
    if v.allowed then
      local ahead = 0
      if s[1] > now then ahead = s[1] - now end
      ahead = ahead * p.limit
      if ahead > p.undelayed then v.delay = ceil_ms((ahead - p.undelayed) / p.limit) else v.delay = 0 end
    end
  end,
  adjust = gcra.adjust,
  idle = gcra.idle,
}
