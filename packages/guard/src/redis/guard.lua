-- Guard state on Redis: the Lua twin of the guard's record rules (src/guard/rules.ts: liveAccount, judge,
-- failAccount, lock, succeedAccount; roll, live, noteDistinct), kept in memory by memory-records.ts and
-- source-table.ts, and of the guard's token buckets (token-bucket.lua, loaded before this file with the
-- store's prelude). One call runs a
-- batch of operations, in order, from any number of logins: on a Cluster every key of one call shares
-- one hash slot (the caller groups by slot), so every call is atomic and never CROSSSLOT. Time is the
-- guard's clock (each operation's `now`), so every app server judges expiry as the memory state would;
-- each key also gets a TTL for the same moment, so Redis reclaims what the guard would have forgotten.
--
-- Within a call every key is read by one MGET at its start and written at most once (SET ... PX, or DEL)
-- when the batch ends: each redis.call costs more than the Lua around it, so a login's reads cost a share
-- of one command, and a stuffing wave's many attempts from one address one write of it.
--
-- Reads are not here: a check reads its keys with a plain MGET and decodes them in the app (records.ts
-- decodes as decodeAccount and decodeSource below, then applies rules.ts), so a check costs Redis no script. Nor
-- is a first login's success, whose check found no key at all: the app packs its account record as AC
-- below does (records.ts's packSuccess) and creates it with SET NX.
--
-- Keys and values (all packed with struct, little-endian doubles):
--   account  <prefix>:{ga:<account>}          uf ff ul fl lf fu exp, then the wrong password tags and the
--                                              familiar source tags (comma-joined), then familiar ends
--   pair     <prefix>:{ga:<account>}:p:<addr>  the account+address bucket ('dd', as the store's slab), in
--                                              the account's slot so a login's account work is one call
--   source   <prefix>:{gs:<source>}:v2         gen f s pf ps last (ratio counts), the address's or subnet's
--                                              bucket (deficit, at) and when it is full again, then per
--                                              failed account its 32-bit hash and when it last failed
--   failures <prefix>:{gf:<monitor>}:<bucket>  the fleet's anomaly count (INCRBY)
--
-- ARGV: the number of sessions, each session's signature and constants (a guard's options, SESSION_ARGS
-- values), then per operation its code and arguments; a login's operations (AF AS SN) take their
-- session and time from the last T operation before them. Reply: one flat array, each operation's fields
-- in turn.

local REMEMBERED_PASSWORDS = 3
local SESSION_ARGS = 17
local ACC_HEAD, SRC_HEAD = '<dddddddHH', '<ddddddddd'
local ACC_HEAD_BYTES, SRC_HEAD_BYTES = 60, 72
local TB, sha1hex
local READY = false
local ARGV_
local SESSIONS, NSESSIONS = {}, 0

-- Per call: the values the MGET read (false: none), decoded records by key (false: none), and the keys to
-- write when the call ends, in order.
local PRE, REC, KIND, DIRTY, NDIRTY

local function split(s)
  local t = {}
  if s and s ~= '' then for x in string.gmatch(s, '[^,]+') do t[#t + 1] = x end end
  return t
end

-- A struct layout: `head`, then n little-endian doubles, made once per head and n. A record packs or
-- unpacks whole with one: a call per value costs more than the value.
local LAYOUTS = {}
local function layout(head, n)
  local byCount = LAYOUTS[head]
  if not byCount then
    byCount = {}
    LAYOUTS[head] = byCount
  end
  local f = byCount[n]
  if not f then
    f = head .. string.rep('d', n)
    byCount[n] = f
  end
  return f
end

-- The little-endian doubles from raw at `at` to its end.
local function doubles(raw, at)
  local n = (#raw - at + 1) / 8
  if n < 1 then return {} end
  local t = { sunpack(layout('<', n), raw, at) }
  t[n + 1] = nil -- unpack's last value is the position after
  return t
end

local function touch(key, kind)
  if not DIRTY[key] then
    DIRTY[key] = true
    NDIRTY = NDIRTY + 1
    DIRTY[NDIRTY] = key
  end
  KIND[key] = kind
end

-- ---- accounts ----

local function decodeAccount(raw)
  if not raw or #raw < ACC_HEAD_BYTES then return false end
  local uf, ff, ul, fl, lf, fu, exp, npw, nfam, at = sunpack(ACC_HEAD, raw)
  -- The tag lists stay text until an operation needs them as lists (pwOf, famOf): a check reads neither.
  -- One constructor with every field: a field added later can cost the table a rehash.
  return {
    uf = uf, ff = ff, ul = ul, fl = fl, lf = lf, fu = fu, exp = exp, now = false, pw = false, fam = false,
    pwRaw = string.sub(raw, at, at + npw - 1), famRaw = string.sub(raw, at + npw, at + npw + nfam - 1), famu = doubles(raw, at + npw + nfam),
  }
end

-- The tag lists of the records this library wrote, by their text (a function library's locals outlive
-- a call): a list is split again from its text (a string per tag) only when it is not here. Each is taken
-- by the first record that reads it back, as that record may change it; at most MAX_LISTS are kept.
local LISTS, NLISTS, MAX_LISTS = {}, 0, 4096

local function joined(list)
  local text = table.concat(list, ',')
  if #list > 1 then
    if NLISTS >= MAX_LISTS then LISTS, NLISTS = {}, 0 end
    LISTS[text], NLISTS = list, NLISTS + 1
  end
  return text
end

-- A record's tag list, split from its text the first time an operation needs it as a list.
local function listOf(r, field, text)
  local t = r[field]
  if not t then
    local raw = r[text]
    t = LISTS[raw]
    if t then LISTS[raw] = nil else t = split(raw) end
    r[field] = t
  end
  return t
end

local function pwOf(r) return listOf(r, 'pw', 'pwRaw') end
local function famOf(r) return listOf(r, 'fam', 'famRaw') end

-- An account's head, its wrong password tags and its familiar tags ('c0' packs a string whole), then
-- one double per familiar tag.
local ACC_PACK = ACC_HEAD .. 'c0c0'

local function encodeAccount(r)
  local pw = r.pw and joined(r.pw) or r.pwRaw
  local fam = r.fam and joined(r.fam) or r.famRaw
  local ends = r.famu
  local n = #ends
  return spack(layout(ACC_PACK, n), r.uf, r.ff, r.ul, r.fl, r.lf, r.fu, r.exp, #pw, #fam, pw, fam, unpack(ends, 1, n))
end

local function account(key)
  local r = REC[key]
  if r == nil then
    r = decodeAccount(PRE[key])
    REC[key] = r
  end
  return r
end

-- No wrong password tags: a record's `pw` is its list once split, or false with its text in pwRaw.
local function forgetPasswords(r)
  r.pw, r.pwRaw = false, ''
end

local function forget(r)
  r.uf, r.ff, r.ul, r.fl, r.lf, r.fu = 0, 0, 0, 0, 0, 0
  forgetPasswords(r)
end

-- The live record, or nil: expired parts are dropped as rules.ts's liveAccount drops them.
local function liveAccount(key, now)
  local r = account(key)
  if not r then return nil end
  if r.exp <= now then
    REC[key] = false
    touch(key, 'a')
    return nil
  end
  if r.lf > 0 and r.fu <= now then forget(r) end
  local ends = r.famu
  local stale = false
  for i = 1, #ends do
    if ends[i] <= now then stale = true end
  end
  if stale then
    local all = famOf(r)
    local fam, famu = {}, {}
    for i = 1, #all do
      if ends[i] > now then
        fam[#fam + 1] = all[i]
        famu[#famu + 1] = ends[i]
      end
    end
    r.fam, r.famu = fam, famu
  end
  return r
end

-- Familiar ends of a record with none; never written to (a success builds new lists).
local NO_ENDS = {}

local function newAccount(key, now)
  local r = { uf = 0, ff = 0, ul = 0, fl = 0, lf = 0, fu = 0, exp = now, now = false, pw = false, pwRaw = '', fam = false, famRaw = '', famu = NO_ENDS }
  REC[key] = r
  return r
end

-- The longest a record of a never-succeeded account or source may live in this call (0: no cap), as the
-- T operation sets it: the app's budget of such records (budget.ts), below the evidence's own ends.
local CAP = 0

local function saved(key, r, now)
  r.now = now
  r.cap = CAP
  touch(key, 'a')
end

-- Whether `tag` is one of the comma-joined entries of `text`, found without splitting it.
local function onList(text, tag)
  local from, last = 1, #text
  while true do
    local s, e = string.find(text, tag, from, true)
    if not s then return false end
    if (s == 1 or string.byte(text, s - 1) == 44) and (e == last or string.byte(text, e + 1) == 44) then return true end
    from = s + 1
  end
end

-- The attempt's path from the account's own familiar list, as state.ts's judgePath: familiar ('f') if any
-- of its n tags (ARGV from a0) is on it, else 'u'.
local function judge(r, a0, n)
  if r == nil then return 'u' end
  local fam = r.fam
  for i = a0, a0 + n - 1 do
    local tag = ARGV_[i]
    if fam then
      for j = 1, #fam do
        if fam[j] == tag then return 'f' end
      end
    elseif onList(r.famRaw, tag) then
      return 'f'
    end
  end
  return 'u'
end

-- rules.ts's failAccount, on the path judged from the attempt's n tags in ARGV from a0. Returns counted
-- (1 or 0), the record and the path.
local function failAccount(key, now, tag, memoryMs, a0, ntags)
  local r = liveAccount(key, now)
  local path = judge(r, a0, ntags)
  if tag ~= '' and r ~= nil then
    local pw = pwOf(r)
    for i = 1, #pw do
      if pw[i] == tag then return 0, r, path end
    end
  end
  if r == nil then r = newAccount(key, now) end
  if path == 'f' then r.ff = r.ff + 1 else r.uf = r.uf + 1 end
  r.lf = now
  r.fu = now + memoryMs
  if tag ~= '' then
    local pw = pwOf(r)
    table.insert(pw, 1, tag)
    while #pw > REMEMBERED_PASSWORDS do table.remove(pw) end
  end
  r.exp = max(r.exp, now + memoryMs)
  saved(key, r, now)
  return 1, r, path
end

-- rules.ts's lockAccount: keeps a later lock, and the record lives until the lock ends.
local function lock(r, path, untilMs)
  if path == 'f' then
    if untilMs > r.fl then r.fl = untilMs end
  elseif untilMs > r.ul then
    r.ul = untilMs
  end
  if untilMs > r.exp then r.exp = untilMs end
end

-- Whether `tag` is one of the n tags in ARGV from a0.
local function among(tag, a0, n)
  for i = a0, a0 + n - 1 do
    if ARGV_[i] == tag then return true end
  end
  return false
end

-- rules.ts's succeedAccount, on the path judged from the attempt's n tags in ARGV from a0. Returns the
-- path and the strangers' failures before. The familiar list becomes the tags, in order, then the others
-- it held, at most maxFamiliar: built anew rather than edited in place (each table.insert or remove in the
-- middle of a list moves its tail).
local function succeedAccount(key, now, familiarMs, maxFamiliar, a0, ntags)
  local r = liveAccount(key, now)
  local path = judge(r, a0, ntags)
  local ufBefore = r and r.uf or 0
  local fam, ends, n = {}, {}, 0
  local untilMs = now + familiarMs
  for i = a0, a0 + ntags - 1 do
    local tag = ARGV_[i]
    if n < maxFamiliar and not among(tag, a0, i - a0) then
      n = n + 1
      fam[n], ends[n] = tag, untilMs
    end
  end
  if r then
    local old, oldEnds = famOf(r), r.famu
    for j = 1, #old do
      if n >= maxFamiliar then break end
      if not among(old[j], a0, ntags) then
        n = n + 1
        fam[n], ends[n] = old[j], oldEnds[j]
      end
    end
  else
    r = newAccount(key, now)
  end
  r.fam, r.famu = fam, ends
  if path == 'u' then
    forget(r)
  else
    r.ff, r.fl = 0, 0
    forgetPasswords(r)
    if r.uf == 0 then r.lf = 0 end
  end
  local exp = r.ul
  if r.lf > 0 then exp = max(exp, r.fu) else exp = max(exp, now) end
  for i = 1, n do exp = max(exp, ends[i]) end
  r.exp = exp
  saved(key, r, now)
  return path, ufBefore
end

-- ---- buckets (token-bucket.lua's state: deficit, time of the last change) ----

local function decodeBucket(raw)
  if raw and #raw == 16 then
    local d, at = sunpack('dd', raw)
    return { d, at }
  end
  return { 0, 0 }
end

local function pairBucket(key)
  local b = REC[key]
  if not b then
    -- false: deleted earlier in this batch, so idle
    if b == nil then b = decodeBucket(PRE[key]) else b = { 0, 0 } end
    REC[key] = b
  end
  return b
end

-- ---- sources ----

-- A source's failed accounts are `ent`: each account's 32-bit hash (source-table.ts's hash32, sent by
-- the app) and when it last failed, in turn.
local function decodeSource(raw)
  if not raw or #raw < SRC_HEAD_BYTES then return false end
  local gen, f, s, pf, ps, last, bd, bat, bend = sunpack(SRC_HEAD, raw)
  return { gen = gen, f = f, s = s, pf = pf, ps = ps, last = last, b = { bd, bat }, bend = bend, ent = doubles(raw, SRC_HEAD_BYTES + 1) }
end

local function encodeSource(src)
  local ent = src.ent
  local n = #ent
  return spack(layout(SRC_HEAD, n), src.gen, src.f, src.s, src.pf, src.ps, src.last, src.b[1], src.b[2], src.bend, unpack(ent, 1, n))
end

local function source(key)
  local src = REC[key]
  if src == nil then
    src = decodeSource(PRE[key])
    if not src then src = { gen = 0, f = 0, s = 0, pf = 0, ps = 0, last = 0, b = { 0, 0 }, bend = -INF, ent = {}, empty = true } end
    REC[key] = src
  end
  return src
end

-- Whether the source's counts are live (source-table.ts drops a row idle for two of its longest windows).
local function live(src, now, idleMs)
  return not src.empty and src.last + idleMs > now
end

-- The ratio counts move to the generation of `now`, exactly as source-table.ts's roll().
local function roll(src, windowMs, now)
  local gen = floor(now / windowMs)
  if gen == src.gen then return end
  if gen == src.gen + 1 then src.pf, src.ps = src.f, src.s else src.pf, src.ps = 0, 0 end
  src.f, src.s, src.gen = 0, 0, gen
end

-- source-table.ts's noteDistinct: the account's entry moves to now; else an entry past both windows is
-- reused, else one is added below the cap, else the oldest is replaced (the count then reads "at least").
local function noteDistinct(src, hash, now, setMs, maxDistinct)
  local ent = src.ent
  local count = #ent / 2
  local oldest, oldestSeen = 0, INF
  for k = 1, count do
    local i = 2 * k
    if ent[i - 1] == hash then
      ent[i] = now
      return
    end
    if ent[i] < oldestSeen then oldest, oldestSeen = k, ent[i] end
  end
  local k
  if oldest > 0 and oldestSeen + setMs <= now then k = oldest
  elseif count < maxDistinct then k = count + 1
  else k = oldest end
  ent[2 * k - 1], ent[2 * k] = hash, now
end

-- source-table.ts's note(): a failure on the account hashed `hash` ('1'), a success ('0'), or a
-- stranger's success ('t'), which is noted only on a source already tracked (live): nil then, and
-- nothing is written. The record's end is kept for the write.
local function noteSource(key, now, hash, what, ratioMs, setMs, maxDistinct, idleMs)
  local src = source(key)
  if not live(src, now, idleMs) then
    if what == 't' then return nil end
    src.gen, src.f, src.s, src.pf, src.ps, src.ent = 0, 0, 0, 0, 0, {}
  end
  src.empty = nil
  roll(src, ratioMs, now)
  src.last = now
  if what == '1' then
    src.f = src.f + 1
    noteDistinct(src, hash, now, setMs, maxDistinct)
  else
    src.s = src.s + 1
  end
  src.idleMs = idleMs
  src.now = now
  src.cap = CAP
  touch(key, 's')
  return src
end

-- ---- sessions: a guard's options, sent once per call ----

local function session(a)
  local function bucket(limit, windowMs, burst)
    local p = { limit = limit, windowMs = windowMs, burst = burst }
    TB.init(p)
    return p
  end
  local s = {
    distinctMs = tonumber(ARGV_[a]), longMs = tonumber(ARGV_[a + 1]), ratioMs = tonumber(ARGV_[a + 2]), maxDistinct = tonumber(ARGV_[a + 3]),
    memoryMs = tonumber(ARGV_[a + 4]), familiarMs = tonumber(ARGV_[a + 5]), maxFamiliar = tonumber(ARGV_[a + 6]),
    free = tonumber(ARGV_[a + 7]), baseMs = tonumber(ARGV_[a + 8]), maxMs = tonumber(ARGV_[a + 9]), jitter = tonumber(ARGV_[a + 10]),
  }
  s.i = bucket(tonumber(ARGV_[a + 11]), 86400000, tonumber(ARGV_[a + 12]))
  s.n = bucket(tonumber(ARGV_[a + 13]), 86400000, tonumber(ARGV_[a + 14]))
  s.p = bucket(tonumber(ARGV_[a + 15]), 3600000, tonumber(ARGV_[a + 16]))
  s.setMs = max(s.distinctMs, s.longMs)
  s.idleMs = max(s.setMs, 2 * s.ratioMs) -- rules.ts's longestWindow
  return s
end

-- backoff.ts's backoffMs.
local function backoff(s, failures, random)
  if failures <= s.free then return 0 end
  local unjittered = min(s.maxMs, s.baseMs * 2 ^ min(failures - s.free - 1, 60))
  return ceil(unjittered * (1 + s.jitter * random))
end

-- ---- the batch ----

-- The attempt's tags, counted at ARGV[c]: their first index, their number, and the index after them.
local function tagRange(c)
  local n = tonumber(ARGV_[c])
  return c + 1, n, c + 1 + n
end

-- Writes every record the batch changed, once, with a TTL that ends when the guard would forget it.
local function flush()
  for i = 1, NDIRTY do
    local key = DIRTY[i]
    local r, kind = REC[key], KIND[key]
    local ends, value, now = -INF, nil, 0
    if not r then
      -- deleted
    elseif kind == 'a' then
      ends, now = r.exp, r.now
      -- No familiar source (no success kept): under the budget's cap, but never before a lock ends.
      if r.cap and r.cap > 0 and #r.famu == 0 then ends = min(ends, max(now + r.cap, r.ul, r.fl)) end
      value = encodeAccount(r)
    elseif kind == 'b' then
      if r.p then
        ends, now = TB.idle(r.p, r), r.now
        value = spack('dd', r[1], r[2])
      end
    else
      ends, now = max(r.last + r.idleMs, r.bend), r.now
      -- No success in its ratio window: under the budget's cap, but never before its bucket is full again.
      if r.cap and r.cap > 0 and r.s == 0 and r.ps == 0 then ends = min(ends, max(now + r.cap, r.bend)) end
      value = encodeSource(r)
    end
    if ends <= now then
      rcall('DEL', key)
    else
      rcall('SET', key, value, 'PX', fmt('%d', ceil(ends - now)))
    end
  end
end

local function adjust(b, p, key, kind, now)
  TB.adjust(p, b, now, 1)
  b.p, b.now = p, now
  if kind then touch(key, kind) end
end

local function run(KEYS, ARGV)
  if not READY then
    bind_libraries()
    TB = ALG['token-bucket']
    sha1hex = redis.sha1hex
    READY = true
  end
  ARGV_ = ARGV
  CAP = 0
  REC, KIND, DIRTY, NDIRTY = {}, {}, {}, 0
  PRE = {}
  if #KEYS > 0 then
    local vals = rcall('MGET', unpack(KEYS))
    for i = 1, #KEYS do PRE[KEYS[i]] = vals[i] end
  end
  local S = {}
  local a = 2
  for i = 1, tonumber(ARGV[1]) do
    -- A session starts with its signature: loaded as a function library, this file's locals outlive a
    -- call, so a session's constants are parsed once rather than on every call.
    local sig = ARGV[a]
    local s = SESSIONS[sig]
    if not s then
      s = session(a + 1)
      if NSESSIONS >= 64 then SESSIONS, NSESSIONS = {}, 0 end
      SESSIONS[sig], NSESSIONS = s, NSESSIONS + 1
    end
    S[i] = s
    a = a + 1 + SESSION_ARGS
  end
  local out, n, k = {}, 0, 1
  local nargs = #ARGV
  local skip = 0
  -- The path the last AS judged, for the SN operations of its success that follow ('j').
  local judged = 'u'
  local s, now
  while a <= nargs do
    local op = ARGV[a]
    if skip > 0 then
      -- An operation that depends on a failure that was not counted (a repeated password): skipped, with
      -- its arguments (every login source operation has the same two) and its one key.
      skip = skip - 1
      a = a + 3
      k = k + 1
    elseif op == 'T' then
      -- The session, time and cap of the login operations that follow. ARGV: session, now, the longest a
      -- never-succeeded account's or source's record may live (0: none; see CAP).
      s, now, CAP = S[tonumber(ARGV[a + 1])], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
      a = a + 4
    elseif op == 'AF' then
      -- A login's failure, account part: counted unless the password is one of the last three wrong
      -- ones; then the backoff lock and the pair bucket. ARGV: password tag, random, the attempt's tags
      -- (count first), and how many source operations that follow depend on it.
      local tag, random = ARGV[a + 1], tonumber(ARGV[a + 2])
      local a0, ntags, b = tagRange(a + 3)
      local counted, r, path = failAccount(KEYS[k], now, tag, s.memoryMs, a0, ntags)
      if counted == 1 then
        local wait = backoff(s, path == 'f' and r.ff or r.uf, random)
        if wait > 0 then lock(r, path, now + wait) end
        adjust(pairBucket(KEYS[k + 1]), s.p, KEYS[k + 1], 'b', now)
      else
        skip = tonumber(ARGV[b])
      end
      out[n + 1], out[n + 2], out[n + 3], out[n + 4] = counted, path == 'f' and r.ff or r.uf, r.ff + r.uf, path
      n = n + 4
      a, k = b + 1, k + 2
    elseif op == 'AS' or op == 'AC' then
      -- A login's success, account part: the success, and the pair bucket forgotten. ARGV: for AC, the
      -- success as the app computed it from the account's record as its check read it (records.ts): the
      -- SHA1 of the record as read ('' for none), the new record's uf ul lf fu exp, its familiar tags
      -- (comma-joined), their number and ends, its time to live, and the path and failures before as the
      -- app judged them, packed and written as they are if the record is still what the check read (nor
      -- touched earlier in this call), else done here as AS does; then for both, '1' when the pair's key
      -- follows the account's ('0': the check found no pair bucket), and the tags.
      local key, path, before = KEYS[k], nil, nil
      if op == 'AC' then
        local read, pre, nends = ARGV[a + 1], PRE[key], tonumber(ARGV[a + 8])
        if REC[key] == nil and (read == '' and not pre or pre and read == sha1hex(pre)) then
          -- struct.pack reads a number from its text itself, so the fields go to it as they came.
          local fam = ARGV[a + 7]
          local value = spack(layout(ACC_PACK, nends), ARGV[a + 2], 0, ARGV[a + 3], 0, ARGV[a + 4], ARGV[a + 5], ARGV[a + 6], 0, #fam, '', fam,
            unpack(ARGV, a + 9, a + 8 + nends))
          rcall('SET', key, value, 'PX', ARGV[a + 9 + nends])
          PRE[key] = value -- what a later operation of this call reads
          path, before = ARGV[a + 10 + nends], tonumber(ARGV[a + 11 + nends])
        end
        a = a + 11 + nends
      end
      local a0, ntags, b = tagRange(a + 2)
      if path == nil then path, before = succeedAccount(key, now, s.familiarMs, s.maxFamiliar, a0, ntags) end
      judged = path
      if ARGV[a + 1] == '1' then
        local pk = KEYS[k + 1]
        if REC[pk] or (REC[pk] == nil and PRE[pk]) then -- a pair bucket there is: forgotten
          REC[pk] = false
          touch(pk, 'b')
        end
        k = k + 1
      end
      out[n + 1], out[n + 2] = path, before
      n = n + 2
      a, k = b, k + 1
    elseif op == 'SN' then
      -- A login's outcome on one source. ARGV: the account's hash, and '0' for a success, 't' for a
      -- stranger's success (noted only where the source is tracked), 'j' for a success whose path the AS
      -- before it judged ('0' if familiar, else 't'), '1' for a failure, 'i' or 'n' for a failure that also
      -- charges the address's or subnet's bucket. No reply.
      local key, hash, what = KEYS[k], tonumber(ARGV[a + 1]), ARGV[a + 2]
      if what == 'j' then what = judged == 'f' and '0' or 't' end
      -- A stranger's success where no record is, nor was made earlier in this call: nothing to note.
      if what ~= 't' or REC[key] ~= nil or PRE[key] then
        local src = noteSource(key, now, hash, (what == 'i' or what == 'n') and '1' or what, s.ratioMs, s.setMs, s.maxDistinct, s.idleMs)
        if what == 'i' or what == 'n' then
          local p = s[what]
          TB.adjust(p, src.b, now, 1)
          src.bend = TB.idle(p, src.b)
        end
      end
      a, k = a + 3, k + 1
    elseif op == 'SF' then
      -- shareFailures: the fleet's failure count per anomaly bucket. ARGV: time to live, the number of
      -- buckets, what to add to each. Replies each bucket's total after the additions.
      local ttl, count = ARGV[a + 1], tonumber(ARGV[a + 2])
      for i = 1, count do
        local key, add = KEYS[k + i - 1], tonumber(ARGV[a + 2 + i])
        if add > 0 then
          out[n + i] = rcall('INCRBY', key, add)
          rcall('PEXPIRE', key, ttl)
        else
          out[n + i] = tonumber(rcall('GET', key) or '0')
        end
      end
      n = n + count
      a, k = a + 3 + count, k + count
    elseif op == 'RB' then
      -- readBaselines: the monitors' persisted baselines (a JSON text the guard validates), or ''.
      out[n + 1] = rcall('GET', KEYS[k]) or ''
      n = n + 1
      a, k = a + 1, k + 1
    elseif op == 'WB' then
      -- writeBaselines. ARGV: time to live, the text.
      rcall('SET', KEYS[k], ARGV[a + 2], 'PX', ARGV[a + 1])
      out[n + 1] = 1
      n = n + 1
      a, k = a + 3, k + 1
    else
      return redis.error_reply('ERR sluice guard script: unknown operation ' .. tostring(op))
    end
  end
  flush()
  return out
end
