-- Take a session slot of one key if it holds fewer than max, atomically;
-- with displace set, make room at the cap by dropping the oldest leases.
-- See doc.go for the model and the key layout.
--
-- KEYS[1]  the lease set (prefix .. "cap:{" .. scope .. ":" .. name .. "}")
-- ARGV[1]  max, the cap (1 .. 65535 in practice)
-- ARGV[2]  the lease TTL in ms
-- ARGV[3]  the new lease's id, unique to the instance, with its owner
--          (see RedisStore.AcquireFor)
-- ARGV[4]  "1" to displace the oldest leases at the cap, else "0"
--
-- Returns {acquired (0/1), leases held before this one, the new member,
-- displaced members...}. A member is the lease's birth time in ms, 13
-- digits, then "|" and ARGV[3]: byte order is age order, whichever
-- instance took the lease, because the time is Redis' own.
--
-- Scores are expiry times in ms of Redis TIME: about 1.8e12, exact in a
-- Lua double (below 2^53), like every sum here.

local max = tonumber(ARGV[1])
local ttl = tonumber(ARGV[2])

-- TIME is allowed in scripts since Redis 5 replicates script effects,
-- and it is the only mode in Redis 7. Truncate microseconds to ms.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- Leases not renewed in time belong to sessions that ended without a
-- release (a crashed instance): their slots are free.
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local held = redis.call('ZCARD', KEYS[1])
local out = {1, held, ''}
if held >= max then
  if ARGV[4] ~= '1' then
    return {0, held}
  end
  -- The oldest first: held is at most a little above max (renewal can
  -- write back leases past it), so sorting the few members is cheap.
  local members = redis.call('ZRANGE', KEYS[1], 0, -1)
  table.sort(members)
  for i = 1, held - max + 1 do
    redis.call('ZREM', KEYS[1], members[i])
    out[#out + 1] = members[i]
  end
end
local member = string.format('%013d', now) .. '|' .. ARGV[3]
out[3] = member
redis.call('ZADD', KEYS[1], now + ttl, member)
-- The set lives as long as its longest lease.
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], last[2])
return out
