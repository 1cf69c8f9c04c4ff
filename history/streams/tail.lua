-- Read the newest entries of one destination's history. Prepended by
-- prelude.lua (ARGV[1..2]).
--
-- KEYS[1], KEYS[2]  the destination's meta and stream
-- ARGV[3]  For in ms
-- ARGV[4]  limit: the most entries returned
--
-- Returns {epoch, last, first, started, offset, payload, offset,
-- payload, ...} with the entries ascending. A destination with no
-- history returns {"", 0, 1, 0} and writes nothing; one whose history
-- lost continuity starts a new epoch (started 1), as an append would.

local h = open(KEYS[1], KEYS[2], tonumber(ARGV[3]))
local limit = tonumber(ARGV[4])
if not h.epoch then
  return {'', 0, 1, 0}
end
local started = 0
if lost(h) then
  new_epoch(h, 1)
  started = 1
end
trim_old(h)

local cutoff = now - h.for_ms
local first = h.last + 1
local oldest = redis.call('XRANGE', h.stream, '-', '+', 'COUNT', 1)
if #oldest > 0 then
  first = id_offset(oldest[1][1])
end
local out = {h.epoch, h.last, first, started}
if limit > 0 then
  local rev = redis.call('XREVRANGE', h.stream, '+', '-', 'COUNT', limit)
  for i = #rev, 1, -1 do
    local e = rev[i]
    -- An entry older than For that trim_old has not reached yet is not
    -- retained: skip it (the Go side then reads the run as trimmed).
    if tonumber(e[2][2]) >= cutoff then
      out[#out + 1] = id_offset(e[1])
      out[#out + 1] = e[2][4]
    end
  end
end
return out
