-- Shared start of append.lua and tail.lua (prepended in redis.go): the
-- clock, the writing Redis process, and the continuity check that
-- starts a new epoch. See doc.go for the model and the key layout.
--
-- Each destination has two keys with one hash tag:
--   meta    a hash: e epoch, l last offset, t Redis ms of the last
--           append, r run_id of the Redis process that wrote it
--   stream  entry id <offset>-0, fields t (ms), d (payload)
--
-- ARGV[1]  the meta hash's TTL in ms
-- ARGV[2]  a fresh epoch prefix, used only if one must be started (the
--          destination's index in the call is appended to it)

local meta_ttl = tonumber(ARGV[1])
local fresh = ARGV[2]

-- TIME is allowed before writes since Redis 5 replicates script effects,
-- and that is the only mode in Redis 7. Truncate microseconds to ms.
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

-- The run_id changes whenever the process that holds the keys changes:
-- a restart (with or without persistence) or a failover to a replica
-- that may have missed the latest writes. Offsets after such a change
-- could repeat ones already delivered, so continuity is not claimed
-- across it. One INFO per call, whatever the number of destinations.
local run = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')

-- open reads one destination's state: h.epoch (false when none),
-- h.last, h.at, h.run.
local function open(meta, stream, for_ms)
  local m = redis.call('HMGET', meta, 'e', 'l', 't', 'r')
  return {meta = meta, stream = stream, for_ms = for_ms,
    epoch = m[1], last = tonumber(m[2]) or 0, at = tonumber(m[3]) or 0, run = m[4]}
end

-- lost reports whether h's history in Redis cannot be the one its epoch
-- promises: another process wrote it, or the stream is gone while its
-- latest entry should still be kept (evicted, deleted).
local function lost(h)
  if h.run ~= run then
    return true
  end
  return h.last > 0 and h.at + h.for_ms > now and redis.call('EXISTS', h.stream) == 0
end

-- new_epoch starts h's history again: new epoch, offsets from 1, no
-- entries.
local function new_epoch(h, i)
  h.epoch = fresh .. i
  h.last = 0
  h.at = 0
  redis.call('DEL', h.stream)
  redis.call('HSET', h.meta, 'e', h.epoch, 'l', 0, 't', 0, 'r', run)
  redis.call('PEXPIRE', h.meta, meta_ttl)
end

-- id_offset is the offset of a stream entry id "<offset>-0".
local function id_offset(id)
  return tonumber(string.match(id, '^(%d+)'))
end

-- trim_old removes h's entries older than For, at most 128 per call:
-- the entries are in time order, so the young ones start where the
-- scan stops. An append removes more than it adds, so old entries never
-- pile up; a reader skips any left (see tail.lua).
local function trim_old(h)
  local cutoff = now - h.for_ms
  local oldest = redis.call('XRANGE', h.stream, '-', '+', 'COUNT', 1)
  if #oldest == 0 or tonumber(oldest[1][2][2]) >= cutoff then
    return
  end
  local scan = redis.call('XRANGE', h.stream, '-', '+', 'COUNT', 128)
  local keep_from = id_offset(scan[#scan][1]) + 1
  for _, e in ipairs(scan) do
    if tonumber(e[2][2]) >= cutoff then
      keep_from = id_offset(e[1])
      break
    end
  end
  redis.call('XTRIM', h.stream, 'MINID', keep_from)
end
