-- One nginx limit_req decision (burst=N nodelay), atomic in Redis.
-- The formula, its bounds and the key layout are described in doc.go;
-- decide in limit.go is the same function in Go and both must agree.
--
-- KEYS[1]  the bucket hash  (prefix .. "hs:{" .. key .. "}:" .. zone)
-- KEYS[2]  the ban string   (prefix .. "ban:{" .. key .. "}")
-- ARGV[1]  rate in requests per second x 1000 (1 .. 1e9)
-- ARGV[2]  burst in requests (0 .. 1e6)
-- ARGV[3]  optional: the current time in ms. A test hook only: production
--          calls never pass it, so the clock is Redis TIME.
--
-- Returns {allowed (0/1), retry_ms, excess, banned (0/1)}.
--
-- Precision: Lua numbers are doubles, exact for integers below 2^53
-- (about 9e15). Milliseconds since 1970 are about 1.8e12; with the bounds
-- on rate and burst and the elapsed time capped where the bucket is empty,
-- every product below stays under about 1e12, so math.floor/math.ceil of
-- the exact quotients give the integers that Go's int64 division gives.
-- Numbers returned to Redis are converted to integers (they already are).

local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])

local now
if ARGV[3] then
  now = tonumber(ARGV[3])
else
  -- TIME is allowed in scripts since Redis 5 replicates script effects,
  -- and it is the only mode in Redis 7. Truncate microseconds to ms.
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local state = redis.call('HMGET', KEYS[1], 'e', 'l')
local stored = tonumber(state[1])
local last = tonumber(state[2])
local fresh = (stored == nil or last == nil)

local ban_ms = redis.call('PTTL', KEYS[2])
if ban_ms > 0 then
  return {0, ban_ms, stored or 0, 1}
end

local excess
if fresh then
  -- A new key costs nothing: burst+1 requests pass from rest.
  excess = 0
else
  local elapsed = now - last
  if elapsed < 0 then
    -- The clock went back: count no time rather than refill.
    elapsed = 0
  end
  -- Past this point the bucket is empty whatever the elapsed time.
  local drain = math.floor((stored + 1000) * 1000 / rate) + 1
  if elapsed > drain then
    elapsed = drain
  end
  excess = stored - math.floor(rate * elapsed / 1000) + 1000
  if excess < 0 then
    excess = 0
  end
  if excess > burst * 1000 then
    -- Refused: nothing changes. The request passes once
    -- rate*t/1000 >= need, t measured from last.
    local need = stored + 1000 - burst * 1000
    local retry = last + math.ceil(need * 1000 / rate) - now
    if retry < 1 then
      retry = 1
    end
    return {0, retry, stored, 0}
  end
end

redis.call('HSET', KEYS[1], 'e', excess, 'l', now)
-- Keep the hash until it would have drained to rest, plus one second.
redis.call('PEXPIRE', KEYS[1], math.floor((excess + 1000) * 1000 / rate) + 1 + 1000)
return {1, 0, excess, 0}
