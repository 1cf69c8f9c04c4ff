-- Take a session slot of one key if it holds fewer than max, atomically.
-- See doc.go for the model and the key layout.
--
-- KEYS[1]  the lease set (prefix .. "cap:{" .. scope .. ":" .. name .. "}")
-- ARGV[1]  max, the cap (1 .. 65535 in practice)
-- ARGV[2]  the lease TTL in ms
-- ARGV[3]  the new lease's id, unique to the instance
--
-- Returns {acquired (0/1), leases held before this one}.
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
if held >= max then
  return {0, held}
end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[3])
-- The set lives as long as its longest lease.
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], last[2])
return {1, held}
