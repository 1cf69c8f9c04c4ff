-- Extend the leases one instance holds in one key's set. See doc.go.
--
-- KEYS[1]  the lease set
-- ARGV[1]  the lease TTL in ms
-- ARGV[2..] the ids of the leases the instance still holds
--
-- Returns how many of them the set no longer had and were written back:
-- their sessions are still open, so they count, even above the cap.

local ttl = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local restored = 0
for i = 2, #ARGV do
  if not redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    restored = restored + 1
  end
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[i])
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if last[2] then
  redis.call('PEXPIREAT', KEYS[1], last[2])
end
return restored
