-- Counts one CONNECT of a key in a fixed window that starts at the key's
-- first CONNECT, atomically in Redis; the model is in doc.go, and
-- MemoryStore.CountAt is the same function in Go.
--
-- KEYS[1]  the key's window hash (prefix .. "rc:{" .. key .. "}"),
--          fields s (the window's start, Redis ms) and n (its count)
-- ARGV[1]  the window in ms (>= 1)
-- ARGV[2]  optional: the current time in ms. A test hook only:
--          production calls never pass it, so the clock is Redis TIME.
--
-- Returns {n, remaining_ms}: the CONNECTs the window holds, this one
-- included, and the ms until it ends. The hash expires when the window
-- ends, so a key that stops connecting costs Redis nothing.

local window = tonumber(ARGV[1])
local now
if ARGV[2] then
  now = tonumber(ARGV[2])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local start = tonumber(redis.call('HGET', KEYS[1], 's'))
local n
if start and now >= start and now - start < window then
  n = redis.call('HINCRBY', KEYS[1], 'n', 1)
else
  start = now
  n = 1
  redis.call('HSET', KEYS[1], 's', start, 'n', 1)
end
local remaining = start + window - now
redis.call('PEXPIRE', KEYS[1], remaining)
return {n, remaining}
