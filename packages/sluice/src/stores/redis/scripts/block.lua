-- Bans (blockFor): twin of src/core/block.ts, operation for operation. A banning policy's state is its
-- algorithm's, then 2 doubles: [ban end (0: none), bans counted]; a sliding log keeps the two as a
-- header pair before its entries. BLOCKING wraps a fixed-size algorithm; the log does its own.
local function ban_length(b, prior)
  local ms, n = b.duration, 0
  -- Repeated multiplication, as in TypeScript: each product rounds alike in both, a power need not.
  while n < prior and ms < b.max do
    ms = ms * b.factor
    n = n + 1
  end
  if ms > b.max then ms = b.max end
  return ceil(ms), n + 1
end

local function ban_remembered(b, count, e, now)
  if count == 0 or b.factor == 1 then return 0 end
  local forgotten = floor((now - e) / b.decay)
  if forgotten >= count then return 0 end
  if forgotten > 0 then return count - forgotten end
  return count
end

local function ban_idle(b, e, count)
  if e == 0 then return -INF end
  if b.factor == 1 then return e end
  return e + count * b.decay
end

local function banned(v, now, e)
  v.allowed = false
  v.remaining = 0
  v.retry = retry_ms(e - now)
  if v.reset < e - now then v.reset = ceil_ms(e - now) end
  v.delay = 0
  v.blocked = true
end

-- A denial of the algorithm's own becomes a ban of ms; a longer wait of its own stands.
local function start_ban(v, now, ms)
  local own = v.retry
  banned(v, now, now + ms)
  if own > v.retry then v.retry = own end
end

local function BLOCKING(inner)
  return {
    init = function(p)
      inner.init(p)
      p.inner_n = p.n
      p.n = p.n + 2
      p.layout = p.layout .. 'dd'
    end,
    evaluate = function(p, s, now, cost, v)
      local n = p.inner_n
      local e = s[n + 1]
      v.bans = false
      if now < e then
        v.reset = 0
        banned(v, now, e)
        return
      end
      v.blocked = false
      inner.evaluate(p, s, now, cost, v)
      local nx = v.next
      if v.allowed then
        nx[n + 1] = e
        nx[n + 2] = s[n + 2]
        return
      end
      if cost == 0 then return end
      local ms, count = ban_length(p.block, ban_remembered(p.block, s[n + 2], e, now))
      for i = 1, n do nx[i] = s[i] end
      nx[n + 1] = now + ms
      nx[n + 2] = count
      v.bans = true
      start_ban(v, now, ms)
    end,
    adjust = function(p, s, now, delta)
      local n = p.inner_n
      local e, c = s[n + 1], s[n + 2]
      inner.adjust(p, s, now, delta)
      s[n + 1], s[n + 2] = e, c
    end,
    idle = function(p, s)
      local a = inner.idle(p, s)
      local b = ban_idle(p.block, s[p.inner_n + 1], s[p.inner_n + 2])
      if a > b then return a end
      return b
    end,
  }
end
