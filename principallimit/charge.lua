-- One principal's fixed-window count, shared by every instance. The model
-- (optimistic frames, the overshoot bound) is described in doc.go.
--
-- KEYS[1]  the count's hash: prefix .. "pl:{" .. principal .. "}:" .. rule
--          Field w is the window's index by Redis' own clock (ms since
--          1970 divided by the window), field c the frames counted in it;
--          a hash whose w is older holds nothing for this window.
-- ARGV[1]  frames this instance already passed without asking (0 .. 1e9):
--          always added, since they are delivered.
-- ARGV[2]  frames asking now (0 .. 1e9): added only if the count after
--          them stays within the limit, otherwise none of them is.
-- ARGV[3]  the limit per window (1 .. 1e9)
-- ARGV[4]  the window in ms (1 .. 1e9)
-- ARGV[5]  optional: the current time in ms. A test hook only: production
--          calls never pass it, so the clock is Redis TIME.
--
-- Returns {allowed (0/1), count after this call, ms left in the window}.
--
-- Precision: Lua numbers are doubles, exact for integers below 2^53
-- (about 9e15). Milliseconds since 1970 are about 1.8e12 and every count
-- is below 3e9, so the arithmetic below is exact.

local optimistic = tonumber(ARGV[1])
local asking = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local window = tonumber(ARGV[4])

local now
if ARGV[5] then
  now = tonumber(ARGV[5])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local index = math.floor(now / window)
local left = (index + 1) * window - now

local state = redis.call('HMGET', KEYS[1], 'w', 'c')
local count = 0
local fresh = tonumber(state[1]) ~= index
if not fresh then
  count = tonumber(state[2]) or 0
end
local allowed = 0
local add = optimistic
if count + optimistic + asking <= limit then
  allowed = 1
  add = add + asking
end
if add > 0 then
  count = count + add
  redis.call('HSET', KEYS[1], 'w', index, 'c', count)
  if fresh then
    -- The hash lives as long as its window, and a second more for
    -- instances whose clocks lag Redis'.
    redis.call('PEXPIRE', KEYS[1], left + 1000)
  end
end
return {allowed, count, left}
