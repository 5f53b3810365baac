package redisstore

// The Lua scripts run on the server, each as one atomic step. They read
// the clock with TIME, so replicas whose clocks disagree still agree on
// when a reservation or a window ends (Redis replicates the effects:
// absolute scores and PEXPIREAT).
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

// luaReserve takes one unit of every counter, or none.
//
// KEYS[1] is the reservation record; KEYS[2i] and KEYS[2i+1] are counter
// i's committed total and its live reservations. ARGV[1] is the
// reservation id, ARGV[2] its TTL in ms, ARGV[2i+1] and ARGV[2i+2] counter
// i's limit and window in ms (0: none).
//
// It returns {ok, blocked, count1, count2, ...}: ok is 1 or 0, blocked the
// 0-based index of the first counter at its limit or -1.
const luaReserve = luaCommon + `
local rec, id, ttl = KEYS[1], ARGV[1], tonumber(ARGV[2])
local n = (#KEYS - 1) / 2

local rt = redis.call('TYPE', rec)['ok']
if rt ~= 'none' and rt ~= 'list' then return fail(rec, 'holds a ' .. rt .. ', not a reservation') end
local base = {}
for i = 1, n do
  local c, err = committed(KEYS[2 * i])
  if err then return err end
  base[i] = c
  err = zcheck(KEYS[2 * i + 1])
  if err then return err end
end

-- Nothing below can fail.
local now = nowms()
local reply = {1, -1}
for i = 1, n do
  local z = KEYS[2 * i + 1]
  redis.call('ZREMRANGEBYSCORE', z, '-inf', '(' .. num(now))
  reply[i + 2] = base[i] + redis.call('ZCARD', z)
end
if rt == 'list' then
  -- A retried Reserve: the reservation stands.
  return reply
end
for i = 1, n do
  if reply[i + 2] >= tonumber(ARGV[2 * i + 1]) then
    reply[1], reply[2] = 0, i - 1
    return reply
  end
end

local exp = num(now + ttl)
local held = {}
for i = 1, n do
  local c, z = KEYS[2 * i], KEYS[2 * i + 1]
  local window = tonumber(ARGV[2 * i + 2])
  if window > 0 and redis.call('PTTL', c) < 0 then
    -- The window starts with its first unit.
    redis.call('SET', c, num(base[i]), 'PX', num(window))
  end
  redis.call('ZADD', z, exp, id .. '/' .. i)
  if redis.call('PTTL', z) < ttl then redis.call('PEXPIRE', z, num(ttl)) end
  reply[i + 2] = reply[i + 2] + 1
  held[2 * i - 1], held[2 * i] = c, z
end
redis.call('RPUSH', rec, unpack(held))
redis.call('PEXPIRE', rec, num(ttl))
return reply
`

// luaSettle commits or releases a reservation.
//
// KEYS[1] is the reservation record. ARGV[1] is the reservation id,
// ARGV[2] "1" to commit or "0" to release, ARGV[3] the key prefix. It
// returns 1, or 0 when the reservation was unknown (settled, expired or
// never made).
const luaSettle = luaCommon + `
local rec, id, commit, prefix = KEYS[1], ARGV[1], ARGV[2] == '1', ARGV[3]
local rt = redis.call('TYPE', rec)['ok']
if rt == 'none' then return 0 end
if rt ~= 'list' then return fail(rec, 'holds a ' .. rt .. ', not a reservation') end
local held = redis.call('LRANGE', rec, 0, -1)
if #held == 0 or #held % 2 ~= 0 then return fail(rec, 'is not a reservation') end
local cp, zp = prefix .. 'c:', prefix .. 'z:'
for i = 1, #held / 2 do
  local c, z = held[2 * i - 1], held[2 * i]
  if string.sub(c, 1, #cp) ~= cp or string.sub(z, 1, #zp) ~= zp then
    return fail(rec, 'is not a reservation')
  end
  local _, err = committed(c)
  if err then return err end
  err = zcheck(z)
  if err then return err end
end

-- Nothing below can fail.
local now = nowms()
redis.call('DEL', rec)
for i = 1, #held / 2 do
  local c, z = held[2 * i - 1], held[2 * i]
  local m = id .. '/' .. i
  local score = redis.call('ZSCORE', z, m)
  if score then
    redis.call('ZREM', z, m)
    if commit and tonumber(score) >= now then redis.call('INCR', c) end
  end
end
return 1
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
