package redisstore

// The Lua scripts run on the server, each as one atomic step. They read
// the clock with TIME, so replicas whose clocks disagree still agree on
// when a reservation or a window ends (Redis replicates the effects:
// absolute scores and expiry times).
//
// Every script first checks the type and content of every key it touches
// and only then writes: a script that stops on an error has changed
// nothing, and a key of the wrong type yields an error reply starting
// with "TOOLGUARD ", never a wrong count.

// luaCommon is shared by the scripts.
const luaCommon = `
local function fail(key, what)
  return redis.error_reply('TOOLGUARD ' .. key .. ' ' .. what)
end

-- committed returns the committed total held in key (0 when absent).
local function committed(key)
  local t = redis.call('TYPE', key)['ok']
  if t == 'none' then return 0 end
  if t ~= 'string' then return nil, fail(key, 'holds a ' .. t .. ', not a count') end
  local v = redis.call('GET', key)
  if #v > 15 or not string.match(v, '^%d+$') then
    return nil, fail(key, 'holds a string that is not a count')
  end
  return tonumber(v)
end

-- zcheck fails unless key is absent or a sorted set.
local function zcheck(key)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= 'zset' then
    return fail(key, 'holds a ' .. t .. ', not a sorted set of reservations')
  end
end

-- nowms returns the server's clock in milliseconds.
local function nowms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function num(x) return string.format('%.0f', x) end
`

// luaBatch applies a batch of operations to the counters of one hash
// slot, in order: reservations, commits and releases.
//
// KEYS[2k-1] and KEYS[2k] are counter k's committed total (a string) and
// its live reservations (a sorted set: member "{id}/{m}", score = expiry
// in ms, where m is the counter's 1-based position in its reservation).
// ARGV[1] is the guard: "-" for a batch without reservations; else the
// script first reads INFO memory and refuses the whole batch when the
// server's maxmemory-policy is not noeviction (unless the guard is
// "allow") with an error reply "TOOLGUARD-EVICTION {policy}", or when,
// under noeviction, the memory is at maxmemory, with "TOOLGUARD-FULL
// {used} {max}"; the reply then starts with the policy. The rest of ARGV
// is a list of operations:
//
//	R id ttl n  (k m limit window) × n   reserve one unit of each counter, or none
//	C id n      (k m) × n                commit: the held units become committed
//	X id n      (k m) × n                release: the held units return
//
// ttl and window are in ms (window 0: none). For each R the reply holds
// ok (1 or 0), blocked (the 0-based index among the op's counters of the
// first one at its limit, or -1) and the op's n counts (the totals,
// reservations included: after the reservation when ok, as found when
// not). A reservation whose first member is held already (a retried
// request) takes nothing more and answers ok. A commit or release of a
// member that is absent (settled, expired and swept, never made) does
// nothing; a commit of one that expired removes it without counting.
const luaBatch = luaCommon + `
local nk = #KEYS / 2
local cval = {}
for k = 1, nk do
  local c, err = committed(KEYS[2 * k - 1])
  if err then return err end
  cval[k] = c
  err = zcheck(KEYS[2 * k])
  if err then return err end
end

local reply = {}
if ARGV[1] ~= '-' then
  -- Read the policy and the memory in the step that writes: no
  -- reservation is granted on a server that may evict or is full.
  local info = redis.call('INFO', 'memory')
  local policy = string.match(info, 'maxmemory_policy:([%w-]+)') or 'unknown'
  if policy ~= 'noeviction' and ARGV[1] ~= 'allow' then
    return redis.error_reply('TOOLGUARD-EVICTION ' .. policy)
  end
  local max = tonumber(string.match(info, 'maxmemory:(%d+)') or '0')
  if policy == 'noeviction' and max > 0 then
    local used = tonumber(string.match(info, 'used_memory:(%d+)') or '0')
      - tonumber(string.match(info, 'mem_not_counted_for_evict:(%d+)') or '0')
    if used >= max then
      return redis.error_reply('TOOLGUARD-FULL ' .. num(used) .. ' ' .. num(max))
    end
  end
  reply[1] = policy
end

-- Nothing below can fail.
local now = nowms()
local live = {}
local function total(k)
  if not live[k] then
    local z = KEYS[2 * k]
    redis.call('ZREMRANGEBYSCORE', z, '-inf', '(' .. num(now))
    live[k] = redis.call('ZCARD', z)
  end
  return cval[k] + live[k]
end

local i = 2
while i <= #ARGV do
  local op, id = ARGV[i], ARGV[i + 1]
  if op == 'R' then
    local ttl, n, base = tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]), i + 4
    local at = #reply
    reply[at + 1], reply[at + 2] = 1, -1
    local held = redis.call('ZSCORE', KEYS[2 * tonumber(ARGV[base])], id .. '/' .. ARGV[base + 1])
    local retry = held and tonumber(held) >= now
    for j = 1, n do
      local p = base + 4 * (j - 1)
      local t = total(tonumber(ARGV[p]))
      reply[at + 2 + j] = t
      if not retry and reply[at + 1] == 1 and t >= tonumber(ARGV[p + 2]) then
        reply[at + 1], reply[at + 2] = 0, j - 1
      end
    end
    if reply[at + 1] == 1 and not retry then
      local exp = num(now + ttl)
      for j = 1, n do
        local p = base + 4 * (j - 1)
        local k, window = tonumber(ARGV[p]), tonumber(ARGV[p + 3])
        local c, z = KEYS[2 * k - 1], KEYS[2 * k]
        if window > 0 and redis.call('PTTL', c) < 0 then
          -- The window starts with its first unit.
          redis.call('SET', c, num(cval[k]), 'PX', num(window))
        end
        redis.call('ZADD', z, exp, id .. '/' .. ARGV[p + 1])
        if redis.call('PTTL', z) < ttl then redis.call('PEXPIRE', z, num(ttl)) end
        live[k] = live[k] + 1
        reply[at + 2 + j] = reply[at + 2 + j] + 1
      end
    end
    i = base + 4 * n
  else
    local n, base = tonumber(ARGV[i + 2]), i + 3
    for j = 1, n do
      local p = base + 2 * (j - 1)
      local k = tonumber(ARGV[p])
      local z, m = KEYS[2 * k], id .. '/' .. ARGV[p + 1]
      local score = redis.call('ZSCORE', z, m)
      if score then
        redis.call('ZREM', z, m)
        local alive = tonumber(score) >= now
        if alive and live[k] then live[k] = live[k] - 1 end
        if alive and op == 'C' then
          redis.call('INCR', KEYS[2 * k - 1])
          cval[k] = cval[k] + 1
        end
      end
    end
    i = base + 2 * n
  end
end
return reply
`

// luaCount returns a counter's total, reservations included.
//
// KEYS[1] and KEYS[2] are the counter's committed total and its live
// reservations.
const luaCount = luaCommon + `
local c, err = committed(KEYS[1])
if err then return err end
err = zcheck(KEYS[2])
if err then return err end
return c + redis.call('ZCOUNT', KEYS[2], num(nowms()), '+inf')
`
