-- sluice regions, heard: when this region's Redis last heard from each peer region (the 'regions'
-- strategy reads it every exchange period, off the decisions' path, to tell a peer cut off).
-- KEYS[1]: the hash regions-merge.lua stamps. ARGV: time ms or ''.
-- Reply: { this Redis's time ms, region, time, region, time, ... }.
local now = now_ms(ARGV[1])
local reply = { now }
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all do reply[#reply + 1] = all[i] end
return reply
