-- nginx limit_req decisions (burst=N nodelay), each atomic in Redis.
-- The formula, its bounds and the key layout are described in doc.go;
-- decide in limit.go is the same function in Go and both must agree.
--
-- One call makes n decisions, n = #KEYS / 2, in order: decision i reads
-- and writes only its own two keys, so the answers are those of n calls
-- made one after the other at the same millisecond, and a key that
-- appears twice sees the first decision's write. Sending many decisions
-- in one call saves Redis the cost of starting a script for each, most of
-- the cost of a decision; a Cluster client sends n = 1, as keys of one
-- call must share a slot there.
--
-- KEYS[2i-1]  decision i's bucket hash  (prefix .. "hs:{" .. key .. "}:" .. zone)
-- KEYS[2i]    decision i's ban string   (prefix .. "ban:{" .. key .. "}")
-- ARGV[2i-1]  decision i's rate in requests per second x 1000 (1 .. 1e9)
-- ARGV[2i]    decision i's burst in requests (0 .. 1e6)
-- ARGV[2n+1]  optional: the current time in ms. A test hook only:
--             production calls never pass it, so the clock is Redis TIME.
--
-- Returns 4n integers, for each decision in order
-- {allowed (0/1), retry_ms, excess, banned (0/1)}.
--
-- Precision: Lua numbers are doubles, exact for integers below 2^53
-- (about 9e15). Milliseconds since 1970 are about 1.8e12; with the bounds
-- on rate and burst and the elapsed time capped where the bucket is empty,
-- every product below stays under about 1e12, so math.floor/math.ceil of
-- the exact quotients give the integers that Go's int64 division gives.
-- Numbers returned to Redis are converted to integers (they already are).

local n = #KEYS / 2

local now
if ARGV[2 * n + 1] then
  now = tonumber(ARGV[2 * n + 1])
else
  -- TIME is allowed in scripts since Redis 5 replicates script effects,
  -- and it is the only mode in Redis 7. Truncate microseconds to ms.
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- decide makes one decision and returns its four integers.
local function decide(bucket_key, ban_key, rate, burst)
  local state = redis.call('HMGET', bucket_key, 'e', 'l')
  local stored = tonumber(state[1])
  local last = tonumber(state[2])
  local fresh = (stored == nil or last == nil)

  local ban_ms = redis.call('PTTL', ban_key)
  if ban_ms > 0 then
    return 0, ban_ms, stored or 0, 1
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
      return 0, retry, stored, 0
    end
  end

  redis.call('HSET', bucket_key, 'e', excess, 'l', now)
  -- Keep the hash until it would have drained to rest, plus one second.
  redis.call('PEXPIRE', bucket_key, math.floor((excess + 1000) * 1000 / rate) + 1 + 1000)
  return 1, 0, excess, 0
end

local out = {}
for i = 1, n do
  local a, b, c, d = decide(KEYS[2 * i - 1], KEYS[2 * i], tonumber(ARGV[2 * i - 1]), tonumber(ARGV[2 * i]))
  local j = 4 * i
  out[j - 3], out[j - 2], out[j - 1], out[j] = a, b, c, d
end
return out
