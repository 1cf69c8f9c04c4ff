-- Append one app message unless the backlog would pass a bound, after
-- releasing what every consumer group has acknowledged. One script, so
-- that checking the bounds, appending and counting are one atomic step
-- across every instance.
--
-- KEYS[1] the stream the backend reads.
-- KEYS[2] the ledger: a stream with one small entry per unreleased
--         message, with the same id: p (principal), a (address),
--         n (bytes charged).
-- KEYS[3] the counters: a hash of bytes waiting, "t" in total,
--         "p:<principal>" and "a:<address>" for each sender that has any.
-- All three share one hash tag (see keys in backlog.go).
--
-- ARGV[1] principal, ARGV[2] address, ARGV[3] bytes charged,
-- ARGV[4..7] the bounds: principal bytes, address bytes, total bytes,
-- entries; ARGV[8] the most ledger entries one call releases;
-- ARGV[9..] the entry's field/value pairs.
--
-- Returns {1, id} when appended, {0, bound} when refused, bound one of
-- "principal", "address", "total", "entries".
--
-- Numbers: byte counts are integers well below 2^53, exact in Lua's
-- doubles; HINCRBY keeps them as 64-bit integers in Redis.

local stream, ledger, counters = KEYS[1], KEYS[2], KEYS[3]
local principal, address, n = ARGV[1], ARGV[2], tonumber(ARGV[3])
local maxPrincipal, maxAddress = tonumber(ARGV[4]), tonumber(ARGV[5])
local maxTotal, maxEntries = tonumber(ARGV[6]), tonumber(ARGV[7])
local budget = tonumber(ARGV[8])

-- Stream ids are "<ms>-<seq>"; both parts are below 2^53 in practice
-- (ms since 1970), so compare them as numbers.
local function parse(id)
	local ms, seq = string.match(id, "^(%d+)-(%d+)$")
	return tonumber(ms), tonumber(seq)
end

local function less(a, b)
	local am, as = parse(a)
	local bm, bs = parse(b)
	return am < bm or (am == bm and as < bs)
end

local function successor(id)
	local ms, seq = parse(id)
	return string.format("%d-%d", ms, seq + 1)
end

-- releasedBelow returns the first id not yet acknowledged by every group:
-- entries below it were delivered to each group and are not pending in
-- any. Nil when no group exists: nothing is acknowledged then.
local function releasedBelow()
	local ok, groups = pcall(redis.call, "XINFO", "GROUPS", stream)
	if not ok or #groups == 0 then
		return nil
	end
	local limit = nil
	for _, g in ipairs(groups) do
		local name, pending, last
		for i = 1, #g, 2 do
			if g[i] == "name" then name = g[i + 1]
			elseif g[i] == "pending" then pending = g[i + 1]
			elseif g[i] == "last-delivered-id" then last = g[i + 1]
			end
		end
		local below = successor(last)
		if pending > 0 then
			-- The summary form's second element is the smallest pending
			-- id: an entry a consumer read and has not acknowledged
			-- (a backend that crashed mid-read leaves it there until a
			-- worker claims it). Nothing from there on is released.
			local smallest = redis.call("XPENDING", stream, name)[2]
			if less(smallest, below) then
				below = smallest
			end
		end
		if limit == nil or less(below, limit) then
			limit = below
		end
	end
	return limit
end

local function decr(field, by)
	if redis.call("HINCRBY", counters, field, -by) <= 0 then
		redis.call("HDEL", counters, field)
	end
end

-- The stream deleted by hand (or evicted) takes its messages with it:
-- nothing of it is waiting any more.
if redis.call("EXISTS", stream) == 0 then
	redis.call("DEL", ledger, counters)
end

-- Release what every group acknowledged, oldest first, at most budget
-- entries, and trim those entries from the stream and the ledger.
local limit = releasedBelow()
if limit ~= nil then
	local done = redis.call("XRANGE", ledger, "-", "(" .. limit, "COUNT", budget)
	if #done > 0 then
		for _, e in ipairs(done) do
			local f = e[2]
			local p, a, by
			for i = 1, #f, 2 do
				if f[i] == "p" then p = f[i + 1]
				elseif f[i] == "a" then a = f[i + 1]
				elseif f[i] == "n" then by = tonumber(f[i + 1])
				end
			end
			decr("t", by)
			decr("p:" .. p, by)
			decr("a:" .. a, by)
		end
		-- The ledger is trimmed exactly: what stays in it is counted.
		-- The stream only by whole nodes (MINID ~), which never removes
		-- an entry at or above keep and spares rewriting a node on each
		-- call: exact trimming made an append about five times slower.
		local keep = successor(done[#done][1])
		redis.call("XTRIM", ledger, "MINID", keep)
		redis.call("XTRIM", stream, "MINID", "~", keep)
	end
end

-- Reconcile: with nothing in the ledger nothing is waiting, whatever the
-- counters say (a counter left over by an eviction or a key deleted by
-- hand cannot hold a sender back forever).
local entries = redis.call("XLEN", ledger)
if entries == 0 then
	redis.call("DEL", counters)
end

local pBytes = tonumber(redis.call("HGET", counters, "p:" .. principal) or "0")
if pBytes + n > maxPrincipal then
	return {0, "principal"}
end
local aBytes = tonumber(redis.call("HGET", counters, "a:" .. address) or "0")
if aBytes + n > maxAddress then
	return {0, "address"}
end
local total = tonumber(redis.call("HGET", counters, "t") or "0")
if total + n > maxTotal then
	return {0, "total"}
end
if entries + 1 > maxEntries then
	return {0, "entries"}
end

local id = redis.call("XADD", stream, "*", unpack(ARGV, 9))
redis.call("XADD", ledger, id, "p", principal, "a", address, "n", n)
redis.call("HINCRBY", counters, "t", n)
redis.call("HINCRBY", counters, "p:" .. principal, n)
redis.call("HINCRBY", counters, "a:" .. address, n)
return {1, id}
