-- sluice prelude: rounding shared with src/core/time.ts and the packed-state helpers every algorithm uses.
-- Numbers are doubles, as in JavaScript; every formula below mirrors its TypeScript twin operation for
-- operation, so both round identically and decide bit for bit alike.
local ALG = {}
local INF = math.huge
local GRACE = 0 -- extra TTL (ms); set by the driver when times come from the client

local function ceil_ms(ms)
  if ms <= 1e-9 then return 0 end
  return math.ceil(ms - 1e-9)
end

local function retry_ms(ms)
  local up = ceil_ms(ms)
  if up < 1 then return 1 end
  return up
end

-- Fixed-size state: n doubles packed into one string (8 bytes each, exact). Missing or foreign-sized
-- values read as all zeros, the idle state.
local function slab_load(key, n, fmt)
  local raw = redis.call('GET', key)
  if raw and #raw == 8 * n then return { struct.unpack(fmt, raw) } end
  local s = {}
  for i = 1, n do s[i] = 0 end
  return s
end

-- Stores a state with a TTL equal to the time until it is idle; an idle state is simply deleted.
local function save_packed(key, packed, idle, now)
  if idle <= now then
    redis.call('DEL', key)
  else
    redis.call('SET', key, packed, 'PX', math.ceil(idle - now) + GRACE)
  end
end

local function slab_save(key, s, n, fmt, idle, now)
  if idle <= now then
    redis.call('DEL', key)
  else
    redis.call('SET', key, struct.pack(fmt, unpack(s, 1, n)), 'PX', math.ceil(idle - now) + GRACE)
  end
end
