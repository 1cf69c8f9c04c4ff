-- One destination's presence across instances. See doc.go.
--
-- KEYS[1]  hash  "<instance>|<principal>" -> "<sessions>|<info>"
-- KEYS[2]  hash  principal -> how many instances hold a share of it
-- KEYS[3]  zset  instance -> its lease's end, Redis time in ms
-- KEYS[4]  string the destination's event counter
-- ARGV[1]  op: "set", "renew" or "read"
-- ARGV[2]  lease length in ms
-- ARGV[3]  this instance's id (no '|')
-- ARGV[4]  the Pub/Sub channel of events
-- ARGV[5]  the destination
-- ARGV[6]  keep: ms the counter outlives the last write
-- set:   ARGV[7] principal, ARGV[8] sessions (0 removes), ARGV[9] info
-- renew: ARGV[7] "1" when this instance holds members here
--
-- Returns {seq, lease_was_missing} for set and renew, {seq, fields...}
-- (HGETALL of KEYS[1]) for read. Sequence numbers stay below 2^53, the
-- integers a Lua double holds exactly.

local op, lease, self, channel, dest = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local events = {}

local function leave(principal)
  local n = redis.call('HINCRBY', KEYS[2], principal, -1)
  if n <= 0 then
    redis.call('HDEL', KEYS[2], principal)
    events[#events + 1] = {o = 'leave', p = principal}
  end
end

-- Remove the shares of every other instance whose lease ended: it died
-- or lost Redis for longer than the lease.
local dead = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)
for _, inst in ipairs(dead) do
  if inst ~= self then
    local mark = inst .. '|'
    for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
      if string.sub(field, 1, #mark) == mark then
        redis.call('HDEL', KEYS[1], field)
        leave(string.sub(field, #mark + 1))
      end
    end
    redis.call('ZREM', KEYS[3], inst)
  end
end

local missing = 0
local function hold()
  if not redis.call('ZSCORE', KEYS[3], self) then
    missing = 1
  end
  redis.call('ZADD', KEYS[3], now + lease, self)
end

if op == 'set' then
  local principal, sessions, info = ARGV[7], tonumber(ARGV[8]), ARGV[9]
  local field = self .. '|' .. principal
  local had = redis.call('HEXISTS', KEYS[1], field) == 1
  if sessions > 0 then
    hold()
    redis.call('HSET', KEYS[1], field, sessions .. '|' .. info)
    if not had and redis.call('HINCRBY', KEYS[2], principal, 1) == 1 then
      events[#events + 1] = {o = 'join', p = principal, i = info}
    end
  elseif had then
    redis.call('HDEL', KEYS[1], field)
    leave(principal)
  end
elseif op == 'renew' then
  if ARGV[7] == '1' then
    hold()
  end
end

local seq = tonumber(redis.call('GET', KEYS[4]) or '0')
if #events > 0 then
  for _, e in ipairs(events) do
    seq = redis.call('INCR', KEYS[4])
    e.s = seq
  end
  redis.call('PUBLISH', channel, cjson.encode({d = dest, e = events}))
end
if seq > 0 then
  redis.call('PEXPIRE', KEYS[4], tonumber(ARGV[6]))
end

if op == 'read' then
  local out = {seq}
  for _, v in ipairs(redis.call('HGETALL', KEYS[1])) do
    out[#out + 1] = v
  end
  return out
end
return {seq, missing}
