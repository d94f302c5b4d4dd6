-- Time for the strategies' scripts, loaded before them: the caller's ms when it sends one (a client clock,
-- in tests), else Redis's own TIME in whole ms, so app servers' clocks never matter.
local function now_ms(given)
  local now = tonumber(given)
  if now then return now end
  local tt = redis.call('TIME')
  return tonumber(tt[1]) * 1000 + math.floor(tonumber(tt[2]) / 1000)
end
