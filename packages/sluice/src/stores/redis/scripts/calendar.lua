-- Calendar windows: twin of CalendarWindow in src/core/calendar.ts. Lua knows no time zones, so each
-- operation brings its calendar policies' bounds, computed by the app with Intl around its own now:
-- [start of the period before, start, end, end of the period after]. The period counted is the one that
-- holds this script's now (Redis TIME, or the client's time): a skew between the app's clock and Redis's
-- below a whole period picks the right one. State 'dd': [start of the window counted, count in it].
-- CALS[ci]: the bounds of the ci-th calendar policy for the operation being decided (set by the driver).
local CALS = {}

local function cal_period(p, t)
  local b = CALS[p.ci]
  if t >= b[3] then
    if t < b[4] then return b[3], b[4] end
  elseif t >= b[2] then
    return b[2], b[3]
  elseif t >= b[1] then
    return b[1], b[2]
  end
  return error('sluice: calendar bounds ' .. b[1] .. '..' .. b[4] .. ' do not hold time ' .. t .. ': the app and Redis clocks differ by more than a period')
end

ALG['calendar'] = {
  init = function(p) p.buf = {}; p.n = 2; p.layout = 'dd' end,
  evaluate = function(p, s, now, cost, v)
    local start, e = cal_period(p, now)
    local endsIn = e - now
    if start < s[1] then
      -- The clock stepped back: stand still at the start of the stored window (as the fixed window does).
      start, e = cal_period(p, s[1])
      endsIn = e - start
    end
    local count = 0
    if s[1] == start then count = s[2] end
    local after = count + cost
    v.allowed = after <= p.limit
    v.delay = 0
    if v.allowed then
      v.remaining = p.limit - after
      if after > 0 then v.reset = ceil_ms(endsIn) else v.reset = 0 end
      v.retry = 0
      v.next[1] = start
      v.next[2] = after
    else
      v.remaining = max(0, p.limit - count)
      if count > 0 then v.reset = ceil_ms(endsIn) else v.reset = 0 end
      v.retry = retry_ms(endsIn)
    end
  end,
  adjust = function(p, s, now, delta)
    local current = cal_period(p, now)
    local start = max(current, s[1])
    local count = 0
    if s[1] == start then count = s[2] end
    s[1] = start
    s[2] = max(0, count + delta)
  end,
  idle = function(p, s)
    if s[2] <= 0 then return -INF end
    -- A window older than the bounds is over: it ended by the first of them.
    if s[1] < CALS[p.ci][1] then return CALS[p.ci][1] end
    local _, e = cal_period(p, s[1])
    return e
  end,
}
