-- Guard state on Redis: the twin of src/guard/memory-state.ts and source-table.ts. ARGV[1] names the
-- operation; each call touches the keys of one account or one source only, and those share a hash tag,
-- so every call is atomic and single-slot on a Cluster. Time is the guard's clock (ARGV[2]), so every
-- app server judges expiry as the memory state would; each key also gets a PEXPIRE for the same moment,
-- so Redis reclaims what the guard would have forgotten.
--
-- Account hash KEYS[1]: uf, ff (failures per path), ul, fl (locks), lf (last failure), fu (failures
-- forgotten at), exp (record expires at), pw (last wrong password tags, newest first, comma-joined),
-- fam, famu (familiar source tags and their ends, newest first, comma-joined).
-- Source hash KEYS[1]: gen, f, s, pf, ps (two-generation ratio counts), last; zset KEYS[2]: account
-- tags that failed from the source, scored by when they last did, kept for the longer distinct window.

local REMEMBERED_PASSWORDS = 3
local op = ARGV[1]
local now = tonumber(ARGV[2])

local function num(x) return string.format('%.17g', x) end

local function split(s)
  local t = {}
  if s then for x in string.gmatch(s, '[^,]+') do t[#t + 1] = x end end
  return t
end

local function forget(r)
  r.uf, r.ff, r.ul, r.fl, r.lf, r.fu, r.pw = 0, 0, 0, 0, 0, 0, {}
end

-- The live record, or nil: expired parts are dropped here as memory-state's liveAccount drops them.
local function loadAccount(key)
  local v = redis.call('HMGET', key, 'uf', 'ff', 'ul', 'fl', 'lf', 'fu', 'exp', 'pw', 'fam', 'famu')
  if not v[7] then return nil end
  local r = { uf = tonumber(v[1]), ff = tonumber(v[2]), ul = tonumber(v[3]), fl = tonumber(v[4]),
    lf = tonumber(v[5]), fu = tonumber(v[6]), exp = tonumber(v[7]), pw = split(v[8]), fam = {}, famu = {} }
  if r.exp <= now then
    redis.call('DEL', key)
    return nil
  end
  if r.lf > 0 and r.fu <= now then forget(r) end
  local fam, famu = split(v[9]), split(v[10])
  for i = 1, #fam do
    local u = tonumber(famu[i])
    if u > now then
      r.fam[#r.fam + 1] = fam[i]
      r.famu[#r.famu + 1] = u
    end
  end
  return r
end

local function newAccount()
  return { uf = 0, ff = 0, ul = 0, fl = 0, lf = 0, fu = 0, exp = now, pw = {}, fam = {}, famu = {} }
end

local function saveAccount(key, r)
  local ttl = math.ceil(r.exp - now)
  if ttl <= 0 then
    redis.call('DEL', key)
    return
  end
  local famu = {}
  for i = 1, #r.famu do famu[i] = num(r.famu[i]) end
  redis.call('HSET', key, 'uf', r.uf, 'ff', r.ff, 'ul', num(r.ul), 'fl', num(r.fl), 'lf', num(r.lf),
    'fu', num(r.fu), 'exp', num(r.exp), 'pw', table.concat(r.pw, ','), 'fam', table.concat(r.fam, ','),
    'famu', table.concat(famu, ','))
  redis.call('PEXPIRE', key, ttl)
end

local function view(r)
  return { r.uf, r.ff, num(r.ul), num(r.fl), num(r.lf), table.concat(r.fam, ',') }
end

local function outcome(counted, r, path)
  return { counted, path == 'f' and r.ff or r.uf, r.ff + r.uf, path }
end

-- Path 'j' (judge): the attempt's path from the account's own familiar list, as memory-state's judgePath:
-- familiar ('f') if any of the attempt's tags, ARGV[first..], is on it, else 'u'.
local function judge(r, first)
  if r == nil then return 'u' end
  for i = first, #ARGV do
    for j = 1, #r.fam do
      if r.fam[j] == ARGV[i] then return 'f' end
    end
  end
  return 'u'
end

-- Sources: the ratio counts move to the generation of `now`, exactly as source-table.ts's roll().
local function roll(s, windowMs)
  local gen = math.floor(now / windowMs)
  if gen == s.gen then return end
  if gen == s.gen + 1 then s.pf, s.ps = s.f, s.s else s.pf, s.ps = 0, 0 end
  s.f, s.s, s.gen = 0, 0, gen
end

local function loadSource(key, idleMs)
  local v = redis.call('HMGET', key, 'gen', 'f', 's', 'pf', 'ps', 'last')
  if not v[6] then return nil end
  local s = { gen = tonumber(v[1]), f = tonumber(v[2]), s = tonumber(v[3]), pf = tonumber(v[4]),
    ps = tonumber(v[5]), last = tonumber(v[6]) }
  if s.last + idleMs <= now then return nil end
  return s
end

-- Counts and window start go back to the caller, which weighs the previous generation (a fraction).
local function sourceView(s, distinctKey, distinctMs, longMs)
  return { num(s.gen), s.f, s.s, s.pf, s.ps, redis.call('ZCOUNT', distinctKey, '(' .. num(now - distinctMs), '+inf'),
    redis.call('ZCOUNT', distinctKey, '(' .. num(now - longMs), '+inf') }
end

if op == 'readAccount' then
  local r = loadAccount(KEYS[1])
  if r == nil then return false end
  return view(r)
elseif op == 'failAccount' then
  -- ARGV: path ('f', 'u', or 'j' with the attempt's tags from ARGV[6]), password tag ('' for none), memoryMs.
  -- Replies counted, failures on the path, total, and the path.
  local path, tag, memoryMs = ARGV[3], ARGV[4], tonumber(ARGV[5])
  local r = loadAccount(KEYS[1])
  if path == 'j' then path = judge(r, 6) end
  if tag ~= '' and r ~= nil then
    for i = 1, #r.pw do
      if r.pw[i] == tag then return outcome(0, r, path) end
    end
  end
  if r == nil then r = newAccount() end
  if path == 'f' then r.ff = r.ff + 1 else r.uf = r.uf + 1 end
  r.lf = now
  r.fu = now + memoryMs
  if tag ~= '' then
    table.insert(r.pw, 1, tag)
    while #r.pw > REMEMBERED_PASSWORDS do table.remove(r.pw) end
  end
  r.exp = math.max(r.exp, now + memoryMs)
  saveAccount(KEYS[1], r)
  return outcome(1, r, path)
elseif op == 'lockAccount' then
  -- ARGV: path, until (ARGV[2] is unused: the interface passes no `now`). As memory-state, the record is
  -- taken as it is, unexpired by the guard's clock; failAccount made it just before. No record, no lock.
  -- The TTL grows by as much as the record's end moves, so Redis and the guard's clock keep agreeing.
  local key, path, untilMs = KEYS[1], ARGV[3], tonumber(ARGV[4])
  local v = redis.call('HMGET', key, 'exp', 'ul', 'fl')
  local pttl = redis.call('PTTL', key)
  if not v[1] or pttl < 0 then return false end
  local field = path == 'f' and 'fl' or 'ul'
  local was = tonumber(path == 'f' and v[3] or v[2])
  if untilMs > was then redis.call('HSET', key, field, num(untilMs)) end
  local exp = tonumber(v[1])
  if untilMs > exp then
    redis.call('HSET', key, 'exp', num(untilMs))
    redis.call('PEXPIRE', key, pttl + math.ceil(untilMs - exp))
  end
  return true
elseif op == 'succeedAccount' then
  -- ARGV: path ('f', 'u', or 'j' to judge it from the source tags), familiarMs, maxFamiliar, source tags
  -- newest first. With 'j' it replies the path and the strangers' failures before this success.
  local path, familiarMs, maxFamiliar = ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
  local judged = path == 'j'
  local r = loadAccount(KEYS[1])
  if judged then path = judge(r, 6) end
  local ufBefore = r and r.uf or 0
  r = r or newAccount()
  if path == 'u' then
    forget(r)
  else
    r.ff, r.fl, r.pw = 0, 0, {}
    if r.uf == 0 then r.lf = 0 end
  end
  local untilMs = now + familiarMs
  for i = #ARGV, 6, -1 do
    local tag = ARGV[i]
    for j = #r.fam, 1, -1 do
      if r.fam[j] == tag then
        table.remove(r.fam, j)
        table.remove(r.famu, j)
      end
    end
    table.insert(r.fam, 1, tag)
    table.insert(r.famu, 1, untilMs)
  end
  while #r.fam > maxFamiliar do
    table.remove(r.fam)
    table.remove(r.famu)
  end
  local exp = r.ul
  if r.lf > 0 then exp = math.max(exp, r.fu) else exp = math.max(exp, now) end
  for i = 1, #r.famu do exp = math.max(exp, r.famu[i]) end
  r.exp = exp
  saveAccount(KEYS[1], r)
  if judged then return { path, ufBefore } end
  return true
elseif op == 'noteSource' or op == 'readSource' then
  -- KEYS[2]: the distinct-accounts zset. ARGV: distinctWindowMs, ratioWindowMs, maxDistinct,
  -- longDistinctWindowMs, and for noteSource the account tag and '1' for a failure or '0' for a success.
  -- One set serves both distinct windows: it keeps entries for the longer one.
  local distinctMs, ratioMs, maxDistinct, longMs = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
  local setMs = math.max(distinctMs, longMs)
  local idleMs = 2 * math.max(setMs, ratioMs)
  local s = loadSource(KEYS[1], idleMs)
  if op == 'readSource' then
    if s == nil then return false end
    roll(s, ratioMs)
    return sourceView(s, KEYS[2], distinctMs, longMs)
  end
  if s == nil then
    s = { gen = 0, f = 0, s = 0, pf = 0, ps = 0, last = 0 }
    redis.call('DEL', KEYS[2])
  end
  roll(s, ratioMs)
  s.last = now
  if ARGV[8] == '1' then
    s.f = s.f + 1
    -- Accounts past the window first go, then the newest joins; over the cap the oldest goes, and the
    -- count reads "at least maxDistinct" (as the memory table's full set).
    redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', num(now - setMs))
    redis.call('ZADD', KEYS[2], num(now), ARGV[7])
    local extra = redis.call('ZCARD', KEYS[2]) - maxDistinct
    if extra > 0 then redis.call('ZREMRANGEBYRANK', KEYS[2], 0, extra - 1) end
    redis.call('PEXPIRE', KEYS[2], math.ceil(idleMs))
  else
    s.s = s.s + 1
  end
  redis.call('HSET', KEYS[1], 'gen', num(s.gen), 'f', s.f, 's', s.s, 'pf', s.pf, 'ps', s.ps, 'last', num(s.last))
  redis.call('PEXPIRE', KEYS[1], math.ceil(idleMs))
  return sourceView(s, KEYS[2], distinctMs, longMs)
end
if op == 'shareFailures' then
  -- The fleet's failure count per anomaly bucket: KEYS are buckets of one monitor (one hash tag), ARGV[2]
  -- their time to live, ARGV[3..] what to add to each. Returns each bucket's total after the additions.
  local ttl = ARGV[2]
  local out = {}
  for i, key in ipairs(KEYS) do
    local add = tonumber(ARGV[i + 2])
    if add > 0 then
      out[i] = redis.call('INCRBY', key, add)
      redis.call('PEXPIRE', key, ttl)
    else
      out[i] = tonumber(redis.call('GET', key) or '0')
    end
  end
  return out
end
return redis.error_reply('ERR sluice guard script: unknown operation ' .. tostring(op))
