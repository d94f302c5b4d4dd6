-- sluice prelude: rounding shared with src/core/time.ts and the packed-state helpers every algorithm uses.
-- Numbers are doubles, as in JavaScript; every formula below mirrors its TypeScript twin operation for
-- operation, so both round identically and decide bit for bit alike.
--
-- This file, the algorithms and the driver only define things at their top level and never touch a
-- standard library there: loaded as a Redis function library, the top level runs once, at FUNCTION LOAD,
-- where Redis 7.0 offers no `math` or `string`. The driver binds these at the start of a call.
local ALG = {}
local floor, ceil, max, min, fmt
-- redis.call and struct's pair, bound like the rest: in a function library a global is found through the
-- globals table's __index, dearer than an upvalue.
local rcall, spack, sunpack
local INF = 1 / 0
local GRACE = 0 -- extra TTL (ms); set by the driver when times come from the client

local function bind_libraries()
  floor, ceil, max, min, fmt = math.floor, math.ceil, math.max, math.min, string.format
  rcall, spack, sunpack = redis.call, struct.pack, struct.unpack
end

local function ceil_ms(ms)
  if ms <= 1e-9 then return 0 end
  return ceil(ms - 1e-9)
end

local function retry_ms(ms)
  local up = ceil_ms(ms)
  if up < 1 then return 1 end
  return up
end

-- Fixed-size state: n doubles packed into one string (8 bytes each, exact), so a key is one GET-able
-- value and one SET … PX writes it with its TTL: every redis.call is the dearest thing a script does, and
-- a hash would need HMGET, HSET and PEXPIRE. Within one batch each key is read once (the driver
-- prefetches the whole batch with one MGET when it can) and written once, when the batch ends.
--
-- Per batch, indexed like KEYS: VALS[ki] is the state of KEYS[ki] as of the operation that reads or
-- writes it there (from the MGET, a GET, or a write), DIRTY[ki] its TTL in ms if that state is still to be
-- written (false: deleted), and SEEN[key] the index holding a key's newest state. So a key that several
-- operations of the batch touch is read from the batch, not from Redis, and only its last state is sent.
-- Missing or foreign-sized values read as all zeros, the idle state.
local VALS, DIRTY, SEEN
-- Per batch, the sliding log's writes: LOGS[key] is the log a batch wrote there (false: deleted, or reset),
-- which a later operation of the batch reads instead of VALS (a log is written at once, not at the end).
local LOGS

-- Reads into `s` (a table the caller reuses: one operation runs at a time) and returns it.
local function slab_load(key, ki, n, layout, s)
  local raw
  local at = SEEN[key]
  if at then
    raw = VALS[at]
  else
    raw = VALS[ki]
    if raw == nil then
      raw = rcall('GET', key)
      VALS[ki] = raw
      SEEN[key] = ki
    end
  end
  if raw and #raw == 8 * n then
    if n == 2 then
      s[1], s[2] = sunpack('dd', raw)
    elseif n == 1 then
      s[1] = sunpack('d', raw)
    else
      local v = { sunpack(layout, raw) }
      for i = 1, n do s[i] = v[i] end
    end
  else
    for i = 1, n do s[i] = 0 end
  end
  return s
end

-- Makes value (a packed state, or false: deleted) the newest state of KEYS[ki]; ttl says what to send
-- when the batch ends: a TTL in ms with the value, false to delete the key, nil for nothing.
local function slab_put(key, ki, value, ttl)
  local at = SEEN[key]
  if at and at ~= ki then DIRTY[at] = nil end -- superseded by this one
  SEEN[key] = ki
  VALS[ki] = value
  DIRTY[ki] = ttl
end

-- Stores a state with a TTL equal to the time until it is idle; an idle state is simply deleted.
local function slab_save(key, ki, s, n, layout, idle, now)
  if idle <= now then return slab_put(key, ki, false, false) end
  local packed
  if n == 2 then packed = spack('dd', s[1], s[2])
  elseif n == 1 then packed = spack('d', s[1])
  else packed = spack(layout, unpack(s, 1, n)) end
  slab_put(key, ki, packed, ceil(idle - now) + GRACE)
end

-- The batch's writes, one per key. The TTL goes as an integer string: Redis 7.0 turns a Lua number
-- argument into text with "%.17g", which costs more than the formatting here. PSETEX would take one
-- argument less (about 0.8 k fewer Redis instructions a write), but Redis calls it deprecated, and an ACL
-- that grants SET need not grant it.
local function flush_writes(keys)
  for ki = 1, #keys do
    local ttl = DIRTY[ki]
    if ttl then
      rcall('SET', keys[ki], VALS[ki], 'PX', fmt('%d', ttl))
    elseif ttl == false then
      rcall('DEL', keys[ki])
    end
  end
end
