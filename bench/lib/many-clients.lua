-- wrk script for bench/http.mjs: each request carries X-Client, one of 100,000 ids in a scattered order,
-- so that a limiter keyed by it sees many clients, each far under its limit.
local n = 0
request = function()
  n = n + 1
  return wrk.format(nil, nil, { ["X-Client"] = tostring((n * 7919) % 100000) })
end
