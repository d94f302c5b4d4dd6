-- sluice driver: runs a batch of operations, in order, for one table's policies. Each operation touches
-- the keys of one identity (one hash tag), and the whole batch is one script call, so it is atomic.
--
-- The table's policies come before this file as constants (P, CLIENT_TIME, LEASES), so that a call carries
-- only its operations: fewer arguments are a measurable part of a call's cost at one call in flight.
-- KEYS: per operation, one key per policy, or one key for all of them (COMBINED: several fixed-size
--       policies without bans keep their states side by side in one value, so a decision writes once);
--       or, on a cluster, one key that routes a call whose keys are of several slots: ARGV then starts
--       with '@<number of keys>' and those keys (batch.ts).
-- ARGV: empty when every operation is a decision of cost 1 and the table sends neither lease ids nor
--       times (the common case: nothing per operation to send, build or parse). Otherwise, per
--       operation: the cost of a decision as a plain number (parsed with one call), or
--       '<code><number>': 'o' decide with per-call limits (cost), 'a' adjust (delta), 'r' release,
--       'x' reset; for 'o' then its limits, per policy '<limit>:<burst>' or '' (the policy's own) joined
--       by ','; then, if the table has calendar windows (NCAL > 0), their bounds (calendar.lua) as
--       'b0,b1,b2,b3' per calendar policy joined by ';'; then its lease id if LEASES, then its time in ms
--       if CLIENT_TIME.
-- Reply: flat integers; every one costs Redis time to send, so the common case is short. Per decide or
--        adjust, per policy: allowed and undelayed, when remaining + 1 < 2^21 and resetAfterMs < 2^32 (so
--        the sum is exact in a double): the one integer (remaining + 1) * 2^32 + resetAfterMs; denied:
--        -(remaining + 1), resetAfterMs, retryAfterMs (negated for a ban); any other allowed verdict: 0, remaining,
--        resetAfterMs, delayMs. Per release: 1 if the lease was held. Per reset: 0.
--        A call of one decision that single() takes replies with that one integer alone, not in a table:
--        Redis turns a table reply into protocol with a lookup of each of its special fields first.
-- Loaded as EVAL source, this file's `run` is called at the end of the chunk; loaded as a function
-- library, `run` is registered, and everything above it was set up once, at load.
if CLIENT_TIME then GRACE = 60000 end -- client and Redis clocks run apart: keep state a while longer
local np = #P
-- Scratch, reused by every operation of every call: each operation's verdicts and loaded states.
local V, ST = {}, {}
for i = 1, np do V[i] = { next = {} } end
-- PREFETCH: every policy's state is fixed-size; READS_FIRST: every key is read before any write (all but
-- concurrency, which reads and writes its hash as it goes), so the batch's keys can be read at its start.
local READY, PREFETCH, READS_FIRST, BANS = false, true, true, false
-- The calendar bounds text last parsed into CALS (one call's operations mostly share it).
local CALTEXT
-- Per-call limits seen, by their ARGV text: the policies each decides with (variants()). A function
-- library keeps them between calls, so they are dropped all at once past VARIANTS_KEPT distinct texts.
local VARIANTS, NVARIANTS, VARIANTS_KEPT = {}, 0, 256
-- Whether a one-key call without arguments can take single(): one fixed-size policy, Redis time.
local SINGLE = false
-- What single() reads on every call, looked up once by prepare(): the one policy, its verdict, its
-- algorithm's evaluate and idle, its state buffer, size and layout, and the verdict's next state. Each field read is a VM instruction and a
-- hash lookup; these upvalues cut about 0.5 k Redis instructions from a lone call.
local P1, V1, NEXT1, EVALUATE1, IDLE1, BUF1, SIZE1, LAYOUT1
-- Several fixed-size policies without bans (COMBINED, set by scripts.ts): their states in one value, each
-- policy's evaluate, idle, state buffer, size and next state by policy index, looked up once by
-- prepare(); CLAYOUT and CN the whole value's layout and doubles, CBUF the scratch it is read into, FLAT
-- the one it is packed from.
local EVS, IDLES, BUFS, SIZES, NEXTS, FLAT = {}, {}, {}, {}, {}, {}
local CLAYOUT, CN, CBUF = '', 0, {}
-- Keys per operation: one per policy, or one for a combined table.
local NKEYS = np
-- An allowed verdict packs into one integer below 2^53 when remaining + 1 < PACK_HEAD and reset < PACK_RESET.
local PACK_HEAD, PACK_RESET = 2 ^ 21, 2 ^ 32

-- Work that needs the standard libraries, so it cannot run at a function library's load.
local function prepare()
  bind_libraries()
  for i = 1, np do
    P[i].alg.init(P[i])
    if not P[i].n then PREFETCH = false end -- not fixed-size state: read by the algorithm itself
    if P[i].alg == ALG['concurrency'] then READS_FIRST = false end
    if P[i].block or P[i].countRejected then BANS = true end -- both write on a denial
  end
  -- A ban writes on a denial, which single() and the inline path never do.
  -- (A counted rejection, countRejected, is a plain write, which single() and the inline path do.)
  SINGLE = np == 1 and P[1].n ~= nil and not CLIENT_TIME and not P[1].block
  if COMBINED ~= (np > 1 and PREFETCH and not BANS) then error('sluice internal: a combined table needs several fixed-size policies without bans') end
  if COMBINED then
    NKEYS = 1
    for i = 1, np do
      local p = P[i]
      EVS[i], IDLES[i], BUFS[i], SIZES[i], NEXTS[i] = p.alg.evaluate, p.alg.idle, p.buf, p.n, V[i].next
      CLAYOUT, CN = CLAYOUT .. p.layout, CN + p.n
    end
  end
  if SINGLE then
    P1, V1, NEXT1 = P[1], V[1], V[1].next
    EVALUATE1, IDLE1, BUF1, SIZE1, LAYOUT1 = P1.alg.evaluate, P1.alg.idle, P1.buf, P1.n, P1.layout
  end
  READY = true
end

-- Fixed-size ("slab") algorithms define evaluate, adjust and idle on a state the driver loads and saves;
-- the others (sliding log, concurrency) load, commit and adjust their own keys.
local function load(p, key, ki)
  if p.n then return slab_load(key, ki, p.n, p.layout, p.buf) end
  return p.alg.load(p, key, ki)
end

local function commit(p, key, ki, st, now, cost, lease, v)
  if p.n then return slab_save(key, ki, v.next, p.n, p.layout, p.alg.idle(p, v.next), now) end
  p.alg.commit(p, key, st, now, cost, lease, v)
end

-- Appends one policy's verdict to out[n + 1 ..]; returns the new n.
local function reply(v, out, n)
  if not v.allowed then
    out[n + 1] = -(v.remaining + 1)
    out[n + 2] = v.reset
    if v.blocked then out[n + 3] = -v.retry else out[n + 3] = v.retry end
    return n + 3
  end
  local head, reset = v.remaining + 1, v.reset
  if v.delay == 0 and head < PACK_HEAD and reset < PACK_RESET then
    out[n + 1] = head * PACK_RESET + reset
    return n + 1
  end
  out[n + 1] = 0
  out[n + 2] = v.remaining
  out[n + 3] = reset
  out[n + 4] = v.delay
  return n + 4
end

-- One decision of every policy (PL: P, or a call's per-call limits) on the keys at keys[k + 1 .. k + np];
-- appends its reply to out[n + 1 ..].
local function decide(PL, keys, k, now, cost, lease, out, n)
  local all = true
  for i = 1, np do
    local p, ki = PL[i], k + i
    local st = load(p, keys[ki], ki)
    ST[i] = st
    p.alg.evaluate(p, st, now, cost, V[i])
    if not V[i].allowed then all = false end
  end
  if all and cost > 0 then
    for i = 1, np do
      local ki = k + i
      commit(PL[i], keys[ki], ki, ST[i], now, cost, lease, V[i])
    end
  elseif BANS and cost > 0 then
    -- The bans this denial starts (blockFor): the one state a denial writes.
    for i = 1, np do
      local v = V[i]
      if v.bans then
        local p, ki = PL[i], k + i
        if p.n then slab_save(keys[ki], ki, v.next, p.n, p.layout, p.alg.idle(p, v.next), now)
        else p.alg.ban(p, keys[ki], ST[i], now, v) end
      end
    end
  end
  for i = 1, np do n = reply(V[i], out, n) end
  return n
end

-- A combined table's states (COMBINED) at `key` as of this operation, read by slab_load, into each
-- policy's buffer: missing or foreign-sized, all zeros (every policy idle).
local function combined_load(key, ki)
  local all, j = slab_load(key, ki, CN, CLAYOUT, CBUF), 0
  for i = 1, np do
    local s = BUFS[i]
    for x = 1, SIZES[i] do
      j = j + 1
      s[x] = all[j]
    end
  end
end

-- Writes the states S[1 .. np] (under PL's policies) as one value, with a TTL until the last of them is
-- idle: a policy idle before the others keeps its state, which then reads as idle, as a missing one does.
local function combined_save(PL, key, ki, S, now)
  local t = -INF
  for i = 1, np do
    local p = PL[i]
    local ti
    if p == P[i] then ti = IDLES[i](p, S[i]) else ti = p.alg.idle(p, S[i]) end
    if ti > t then t = ti end
  end
  if t <= now then return slab_put(key, ki, false, false) end
  local j = 0
  for i = 1, np do
    local st = S[i]
    for x = 1, SIZES[i] do
      j = j + 1
      FLAT[j] = st[x]
    end
  end
  slab_put(key, ki, spack(CLAYOUT, unpack(FLAT, 1, j)), ceil(t - now) + GRACE)
end

-- decide() for a combined table: every state read from the one value, then written back at once if every
-- policy allows; appends the reply to out[n + 1 ..]. One value makes a decision one SET whatever the
-- number of policies: with a key per policy, two policies on a key cost Redis more than the two as two
-- limiters (bench/redis-count.mjs multi counts it).
local function decide_combined(PL, key, ki, now, cost, out, n)
  combined_load(key, ki)
  local all = true
  if PL == P then
    for i = 1, np do
      local v = V[i]
      EVS[i](P[i], BUFS[i], now, cost, v)
      if not v.allowed then all = false end
    end
  else
    for i = 1, np do
      local p, v = PL[i], V[i]
      p.alg.evaluate(p, BUFS[i], now, cost, v)
      if not v.allowed then all = false end
    end
  end
  if all and cost > 0 then combined_save(PL, key, ki, NEXTS, now) end
  for i = 1, np do n = reply(V[i], out, n) end
  return n
end

-- adjust() for a combined table: every state in its one value by delta, without a limit check.
local function adjust_combined(key, ki, now, delta)
  combined_load(key, ki)
  for i = 1, np do P[i].alg.adjust(P[i], BUFS[i], now, delta) end
  combined_save(P, key, ki, BUFS, now)
end

-- The policies a call with per-call limits decides with, from its ARGV text (twin of core/override.ts:
-- the JS side has validated and scaled them; a shaper's undelayed share is capped by its burst).
local function variants(spec)
  local PL = VARIANTS[spec]
  if PL then return PL end
  PL = {}
  local i = 1
  for part in string.gmatch(spec .. ',', '([^,]*),') do
    local b = P[i]
    if part == '' then
      PL[i] = b
    else
      local colon = string.find(part, ':', 1, true)
      local limit, burst = tonumber(string.sub(part, 1, colon - 1)), tonumber(string.sub(part, colon + 1))
      local p = { alg = b.alg, limit = limit, windowMs = b.windowMs, burst = burst, delay = b.delay, sub = b.sub, block = b.block, countRejected = b.countRejected, unit = b.limit, ci = b.ci }
      if p.delay ~= 0 and p.delay > burst then p.delay = burst end
      if b.rescaled and limit ~= b.limit then p.alg = b.rescaled end
      p.alg.init(p)
      PL[i] = p
    end
    i = i + 1
  end
  if NVARIANTS >= VARIANTS_KEPT then VARIANTS, NVARIANTS = {}, 0 end
  VARIANTS[spec] = PL
  NVARIANTS = NVARIANTS + 1
  return PL
end

-- Adjusts every policy's state on the keys at keys[k + 1 .. k + np] by delta, without a limit check.
local function adjust(keys, k, now, delta)
  for i = 1, np do
    local p, ki = P[i], k + i
    local key = keys[ki]
    if p.n then
      local s = slab_load(key, ki, p.n, p.layout, p.buf)
      p.alg.adjust(p, s, now, delta)
      slab_save(key, ki, s, p.n, p.layout, p.alg.idle(p, s), now)
    else
      p.alg.adjust(p, key, p.alg.load(p, key, ki), now, delta)
    end
  end
end

-- Redis's time in whole ms (whole ms keep the buckets exact). String arithmetic, not tonumber + floor:
-- Lua 5.1's tonumber parses each string twice.
local function redis_now()
  local tt = rcall('TIME')
  local ms = tt[2] / 1000
  return tt[1] * 1000 + (ms - ms % 1)
end

-- A call of one decision of cost 1 on one fixed-size policy (all the traffic at one call in flight):
-- what run() does for it, in the same order, without the batch's tables (SEEN, DIRTY, VALS, out), its
-- loop and write-back; GET, not MGET, and an allowed verdict replied as one integer.
-- Its reading, packing and reply are written out here, as in run()'s inline path, rather than shared with
-- slab_load, slab_save and reply() through helper functions: counted on redis-server, such helpers cost
-- 1-2 % more Redis instructions a lone call and 6 % more a batched decision.
local function single(key)
  local p, v, size, s = P1, V1, SIZE1, BUF1
  local now = redis_now()
  local raw = rcall('GET', key)
  if raw and #raw == 8 * size then
    if size == 2 then s[1], s[2] = sunpack('dd', raw)
    elseif size == 1 then s[1] = sunpack('d', raw)
    else
      local u = { sunpack(LAYOUT1, raw) }
      for i = 1, size do s[i] = u[i] end
    end
  else
    for i = 1, size do s[i] = 0 end
  end
  EVALUATE1(p, s, now, 1, v)
  if not v.allowed and not v.bans then return { -(v.remaining + 1), v.reset, v.retry } end
  local nx = NEXT1
  local t = IDLE1(p, nx)
  if t <= now then
    rcall('DEL', key)
  else
    local packed
    if size == 2 then packed = spack('dd', nx[1], nx[2])
    elseif size == 1 then packed = spack('d', nx[1])
    else packed = spack(LAYOUT1, unpack(nx, 1, size)) end
    rcall('SET', key, packed, 'PX', fmt('%d', ceil(t - now) + GRACE))
  end
  if not v.allowed then return { -(v.remaining + 1), v.reset, v.retry } end -- a counted rejection
  local head, reset = v.remaining + 1, v.reset
  if v.delay == 0 and head < PACK_HEAD and reset < PACK_RESET then return head * PACK_RESET + reset end
  return { 0, v.remaining, reset, v.delay }
end

local function run(KEYS, ARGV)
  if not READY then prepare() end
  local nk = #KEYS
  if nk == 1 and SINGLE and #ARGV == 0 then return single(KEYS[1]) end
  SEEN, DIRTY, LOGS = {}, {}, {}
  local a = 1
  if nk == 1 and #ARGV > 0 and string.byte(ARGV[1]) == 64 then
    -- '@<n>' and n keys: a cluster call whose keys are of several slots of this master (batch.ts), which
    -- it may not declare; KEYS[1] only routed it. EVAL source may touch undeclared keys of this master.
    -- A GET each (MGET is for one slot), every key before any write: a key whose slot is not here fails
    -- the call at its GET, with nothing changed, and the caller sends it again by slot.
    if not READS_FIRST then error('sluice internal: a call across slots needs every key read first') end
    nk = tonumber(string.sub(ARGV[1], 2))
    local keys = {}
    VALS = {}
    for ki = 1, nk do
      local key = ARGV[ki + 1]
      keys[ki] = key
      VALS[ki] = rcall('GET', key)
    end
    KEYS, a = keys, nk + 2
  -- One MGET for the whole batch (bounded, as Lua's unpack is).
  elseif READS_FIRST and nk <= 4000 then VALS = rcall('MGET', unpack(KEYS)) else VALS = {} end
  local now
  if not CLIENT_TIME then
    now = redis_now() -- once per batch
  end
  local plain = #ARGV < a
  local out, n = {}, 0
  -- One fixed-size policy, the common table, takes a decision inline: in a batch, the Lua around the
  -- SET is about as costly as the SET itself, and every call and argument is a few more VM instructions.
  -- It does what decide() + commit() + reply() do, in the same order.
  local p1 = P[1]
  local inline = np == 1 and p1.n and not p1.block
  local evaluate, idle, size, layout, s, v = p1.alg.evaluate, p1.alg.idle, p1.n, p1.layout, p1.buf, V[1]
  local nx = v.next
  local k = 0
  while k < nk do
    local code, arg, lease, spec = 'd', 1, '', ''
    if not plain then
      local op = ARGV[a]
      arg = tonumber(op)
      if not arg then code, arg = string.sub(op, 1, 1), tonumber(string.sub(op, 2)) end
      a = a + 1
      if code == 'o' then
        spec = ARGV[a]
        a = a + 1
      end
      if NCAL > 0 then
        local text = ARGV[a]
        a = a + 1
        if text ~= CALTEXT then
          CALTEXT = text
          local ci, j = 1, 1
          for x in string.gmatch(text, '[^,;]+') do
            local b = CALS[ci]
            if not b then b = {}; CALS[ci] = b end
            b[j] = tonumber(x)
            j = j + 1
            if j > 4 then ci, j = ci + 1, 1 end
          end
        end
      end
      if LEASES then
        lease = ARGV[a]
        a = a + 1
      end
      if CLIENT_TIME then
        now = tonumber(ARGV[a])
        a = a + 1
      end
    end
    if code == 'd' and inline then
      local ki = k + 1
      local key = KEYS[ki]
      evaluate(p1, slab_load(key, ki, size, layout, s), now, arg, v)
      -- v.bans: a counted rejection (countRejected) writes as an admission does
      if arg > 0 and (v.allowed or v.bans) then
        local t = idle(p1, nx)
        if t <= now then
          slab_put(key, ki, false, false)
        elseif size == 2 then
          slab_put(key, ki, spack('dd', nx[1], nx[2]), ceil(t - now) + GRACE)
        elseif size == 1 then
          slab_put(key, ki, spack('d', nx[1]), ceil(t - now) + GRACE)
        else
          slab_put(key, ki, spack(layout, unpack(nx, 1, size)), ceil(t - now) + GRACE)
        end
      end
      if not v.allowed then
        out[n + 1] = -(v.remaining + 1)
        out[n + 2] = v.reset
        out[n + 3] = v.retry
        n = n + 3
      else
        local head, reset = v.remaining + 1, v.reset
        if v.delay == 0 and head < PACK_HEAD and reset < PACK_RESET then
          n = n + 1
          out[n] = head * PACK_RESET + reset
        else
          out[n + 1] = 0
          out[n + 2] = v.remaining
          out[n + 3] = reset
          out[n + 4] = v.delay
          n = n + 4
        end
      end
    elseif COMBINED and (code == 'd' or code == 'o' or code == 'a') then
      local key, ki = KEYS[k + 1], k + 1
      if code == 'a' and arg ~= 0 then adjust_combined(key, ki, now, arg) end
      if code == 'd' then n = decide_combined(P, key, ki, now, arg, out, n)
      elseif code == 'o' then n = decide_combined(variants(spec), key, ki, now, arg, out, n)
      else n = decide_combined(P, key, ki, now, 0, out, n) end
    elseif code == 'd' then
      n = decide(P, KEYS, k, now, arg, lease, out, n)
    elseif code == 'o' then
      n = decide(variants(spec), KEYS, k, now, arg, lease, out, n)
    elseif code == 'a' then
      if arg ~= 0 then adjust(KEYS, k, now, arg) end
      n = decide(P, KEYS, k, now, 0, '', out, n)
    elseif code == 'r' then
      local held = 0
      for i = 1, np do
        local p = P[i]
        if p.alg.release and p.alg.release(p, KEYS[k + i], lease, now) then held = 1 end
      end
      n = n + 1
      out[n] = held
    else
      for i = 1, NKEYS do
        -- Delete now, whatever the type, and forget any state read or pending in this batch.
        local ki = k + i
        rcall('DEL', KEYS[ki])
        slab_put(KEYS[ki], ki, false, nil)
        LOGS[KEYS[ki]] = nil -- SEEN now says deleted
      end
      n = n + 1
      out[n] = 0
    end
    k = k + NKEYS
  end
  flush_writes(KEYS)
  return out
end
