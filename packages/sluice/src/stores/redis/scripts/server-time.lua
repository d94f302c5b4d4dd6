-- Time for the strategies' scripts, loaded before them: the caller's ms when it sends one (a client clock,
-- in tests), else Redis's own TIME in whole ms, so app servers' clocks never matter.
local function now_ms(given)
  local now = tonumber(given)
  if now then return now end
  local tt = redis.call('TIME')
  return tonumber(tt[1]) * 1000 + math.floor(tonumber(tt[2]) / 1000)
end

-- The window index a call counts in, and the one the key's hash holds (field w; nil for a new key). A call
-- stamped in a window before the key's latest (client clocks: two nodes' calls reordered across a boundary
-- on their way here) counts in the latest: moving the key back a window would reset it, and a budget
-- reset twice is a budget granted twice. (As the algorithms do when a clock steps back: stand still at the
-- latest time recorded.)
local function window_at(key, now, windowMs)
  local w = math.floor(now / windowMs)
  local stored = tonumber(redis.call('HGET', key, 'w'))
  if stored ~= nil and stored > w then w = stored end
  return w, stored
end
