-- wrk script: POST /json with Envoy's proto3-JSON RateLimitRequest, cycling over 1000 client addresses.
-- The same script drives the bare Node server, which reads nothing and answers a constant.
local reqs = {}
local i = 0
function init(args)
  for n = 1, 1000 do
    local body = '{"domain":"bench","descriptors":[{"entries":[{"key":"remote_address","value":"10.0.' .. (n % 250) .. '.' .. n .. '"}]}]}'
    reqs[n] = wrk.format("POST", "/json", { ["Content-Type"] = "application/json" }, body)
  end
end
function request()
  i = i % 1000 + 1
  return reqs[i]
end
