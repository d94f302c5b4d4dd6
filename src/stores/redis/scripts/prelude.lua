-- sluice prelude: rounding shared with src/core/time.ts and the packed-state helpers every algorithm uses.
-- Numbers are doubles, as in JavaScript; every formula below mirrors its TypeScript twin operation for
-- operation, so both round identically and decide bit for bit alike.
local ALG = {}
local floor, ceil, max, min = math.floor, math.ceil, math.max, math.min
local INF = math.huge
local GRACE = 0 -- extra TTL (ms); set by the driver when times come from the client

local function ceil_ms(ms)
  if ms <= 1e-9 then return 0 end
  return ceil(ms - 1e-9)
end

local function retry_ms(ms)
  local up = ceil_ms(ms)
  if up < 1 then return 1 end
  return up
end

-- Fixed-size state: n doubles packed into one string (8 bytes each, exact). Within one batch, such state
-- is read once (the driver prefetches it with one MGET when it can) and written once, at the end, so a
-- batch costs about one command per decision rather than two. Missing or foreign-sized values read as
-- all zeros, the idle state.
local CACHE, PACKED, TTL, ORDER = {}, {}, {}, {}

-- Reads into `s` (a table the caller reuses: one operation runs at a time) and returns it.
local function slab_load(key, n, fmt, s)
  local raw = CACHE[key]
  if raw == nil then
    raw = redis.call('GET', key)
    CACHE[key] = raw
  end
  if raw and #raw == 8 * n then
    if n == 1 then
      s[1] = struct.unpack('d', raw)
    elseif n == 2 then
      s[1], s[2] = struct.unpack('dd', raw)
    else
      local v = { struct.unpack(fmt, raw) }
      for i = 1, n do s[i] = v[i] end
    end
  else
    for i = 1, n do s[i] = 0 end
  end
  return s
end

-- Records a write (packed == false deletes) to be made when the batch ends.
local function put(key, packed, ttl)
  CACHE[key] = packed
  if PACKED[key] == nil then ORDER[#ORDER + 1] = key end
  PACKED[key] = packed
  TTL[key] = ttl
end

-- Stores a state with a TTL equal to the time until it is idle; an idle state is simply deleted.
local function slab_save(key, s, n, fmt, idle, now)
  if idle <= now then
    put(key, false, 0)
  else
    local packed
    if n == 2 then packed = struct.pack('dd', s[1], s[2])
    elseif n == 1 then packed = struct.pack('d', s[1])
    else packed = struct.pack(fmt, unpack(s, 1, n)) end
    put(key, packed, ceil(idle - now) + GRACE)
  end
end

local function flush_writes()
  for i = 1, #ORDER do
    local key = ORDER[i]
    local packed = PACKED[key]
    if packed then redis.call('SET', key, packed, 'PX', TTL[key]) else redis.call('DEL', key) end
  end
end
