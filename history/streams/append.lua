-- Append messages to destinations' histories and publish each, with its
-- offset and epoch, in one atomic step: history order is delivery
-- order, on every instance. Prepended by prelude.lua (ARGV[1..2]).
--
-- KEYS     meta, stream of each destination, in turn
-- ARGV[3]  "1": SPUBLISH (Redis Cluster), else PUBLISH
-- then, per destination: For in ms, Keep (entries kept, at least:
-- trimmed with MAXLEN ~), the channel (empty: do not publish), the
-- number of payloads n, then the n payloads in order.
--
-- Returns, per destination, {epoch, first offset assigned, 1 if an
-- epoch was started else 0}, flattened. Offsets are below 2^53, exact
-- in a Lua double.

local publish = 'PUBLISH'
if ARGV[3] == '1' then
  publish = 'SPUBLISH'
end

-- uvarint encodes n as Go's encoding/binary.AppendUvarint does.
local function uvarint(n)
  local out = {}
  while n >= 128 do
    out[#out + 1] = string.char(n % 128 + 128)
    n = math.floor(n / 128)
  end
  out[#out + 1] = string.char(n)
  return table.concat(out)
end

local out = {}
local a = 4
for k = 1, #KEYS, 2 do
  local h = open(KEYS[k], KEYS[k + 1], tonumber(ARGV[a]))
  local keep = tonumber(ARGV[a + 1])
  local channel = ARGV[a + 2]
  local n = tonumber(ARGV[a + 3])
  a = a + 4
  local started = 0
  if not h.epoch or lost(h) then
    new_epoch(h, (k + 1) / 2)
    started = 1
  end
  local head = '\3'
  local tail = uvarint(#h.epoch) .. h.epoch
  local first = h.last + 1
  for i = a, a + n - 1 do
    h.last = h.last + 1
    redis.call('XADD', h.stream, 'MAXLEN', '~', keep, h.last .. '-0', 't', now, 'd', ARGV[i])
    if channel ~= '' then
      redis.call(publish, channel, head .. uvarint(h.last) .. tail .. ARGV[i])
    end
  end
  a = a + n
  -- Trimming by age scans the oldest entries: do it when the offsets
  -- cross a multiple of 32, which still removes up to 128 entries per
  -- 32 added. A reader skips old entries left meanwhile.
  if math.floor((first - 1) / 32) ~= math.floor(h.last / 32) then
    trim_old(h)
  end
  redis.call('PEXPIRE', h.stream, h.for_ms)
  redis.call('HSET', h.meta, 'e', h.epoch, 'l', h.last, 't', now, 'r', run)
  redis.call('PEXPIRE', h.meta, meta_ttl)
  out[#out + 1] = h.epoch
  out[#out + 1] = first
  out[#out + 1] = started
end
return out
