package policy

import (
	"strings"
	"time"

	"github.com/stompgate/stompgate/interceptor"
)

// Rules is a compiled, immutable list of destination rules: it finds the
// first rule that matches a destination without allocating, in time that
// does not grow with the number of rules for destinations that share
// nothing with most patterns. Build it with NewRules; the nil *Rules has
// no rules, so every method answers "no rule". A Rules is safe for
// concurrent use.
//
// Matching indexes the patterns by the literal text before their first
// wildcard: every pattern whose literal prefix reaches past the first few
// separators ('/' and '.') is filed under those leading segments, the
// others are tried for every destination. A destination is then tried
// against its own segments' patterns and the others, in rule order, and
// the common shapes of pattern (a literal, "prefix**", "prefix*suffix",
// "prefix**suffix") are matched with a prefix and a suffix comparison;
// the rest by interceptor.MatchDestination, whose cost is bounded by the
// pattern's length times the destination's.
type Rules struct {
	rules []Rule
	pats  []compiled
	// depth is the number of leading separators the index keys on; 0
	// means no index (every pattern is in general).
	depth   int
	buckets table    // key (see compiled.key) → rules, ascending
	general []uint16 // rules tried for every destination, ascending
}

// table is an open-addressing hash table from index keys to rules.
type table struct {
	slots []slot // a power of two long, at most half full
}

// slot is one entry of table; an empty key marks a free slot (no key is
// empty: a pattern is not).
type slot struct {
	key   string
	rules []uint16
}

// hashKey hashes an index key by its length and its last 8 bytes, where
// keys of one policy differ ("/topic/room01." and "/topic/room02."): a
// few cycles, against a per-byte hash of the whole key. Collisions only
// cost a probe; the key itself is compared.
func hashKey(s string) uint64 {
	h := uint64(len(s))
	for i := max(0, len(s)-8); i < len(s); i++ {
		h = h<<8 | uint64(s[i])
	}
	h *= 0x9e3779b97f4a7c15 // Fibonacci hashing: the top bits are mixed
	return h ^ h>>32
}

// add appends rule to key's list, growing nothing: the table is sized
// before the first add.
func (t *table) add(key string, rule uint16) {
	mask := uint64(len(t.slots) - 1)
	for i := hashKey(key) & mask; ; i = (i + 1) & mask {
		sl := &t.slots[i]
		if sl.key == "" {
			sl.key = key
		}
		if sl.key == key {
			sl.rules = append(sl.rules, rule)
			return
		}
	}
}

// get returns key's rules.
func (t *table) get(key string) []uint16 {
	if len(t.slots) == 0 {
		return nil
	}
	mask := uint64(len(t.slots) - 1)
	for i := hashKey(key) & mask; ; i = (i + 1) & mask {
		sl := &t.slots[i]
		if sl.key == key {
			return sl.rules
		}
		if sl.key == "" {
			return nil
		}
	}
}

// shape is how a compiled pattern is matched.
type shape uint8

const (
	shapeLiteral   shape = iota // no wildcard: equality
	shapeAnyRest                // prefix "**": prefix only
	shapeOneStar                // prefix "*" suffix: no separator between
	shapeAnyMiddle              // prefix "**" suffix: anything between
	shapeSegments               // whole-segment "*"s, "**" only last: one pass
	shapeGeneral                // anything else: interceptor.MatchDestination
)

// compiled is one pattern taken apart for matching.
type compiled struct {
	shape          shape
	pattern        string
	prefix, suffix string
	// pieces are a shapeSegments pattern after its prefix: each a "*"
	// and the literal that follows it (empty at the end), and rest
	// whether the pattern ends in "**".
	pieces []piece
	rest   bool
}

// piece is a "*" and the literal after it, which is empty or starts with
// a separator, so the "*" ends at the destination's next separator.
type piece struct{ lit string }

// maxIndexDepth is the deepest the index keys: destinations rarely name
// more than a prefix, a kind and an id before their variable part.
const maxIndexDepth = 4

// NewRules validates rules (as Validate does for a policy's destinations)
// and compiles them, in order, into a Rules. A zero Window of a set limit
// is read as DefaultRuleWindow. The rules are copied. No rules gives an
// empty Rules whose methods answer "no rule".
func NewRules(rules []Rule) (*Rules, error) {
	if err := validateRules(rules); err != nil {
		return nil, prefixed("policy: ", err)
	}
	rs := &Rules{rules: cloneRules(rules), pats: make([]compiled, len(rules))}
	for i := range rs.rules {
		r := &rs.rules[i]
		r.Send, r.Principal = r.Send.withDefaults(), r.Principal.withDefaults()
		if r.Delivery == "" {
			r.Delivery = DeliveryAll
		}
		rs.pats[i] = compile(r.Pattern)
	}
	rs.index()
	return rs, nil
}

// Rules compiles the policy's destination rules (see NewRules).
func (p Policy) Rules() (*Rules, error) { return NewRules(p.Destinations) }

// compile takes one pattern apart.
func compile(p string) compiled {
	c := compiled{pattern: p}
	star := strings.IndexByte(p, '*')
	if star < 0 {
		c.shape = shapeLiteral
		return c
	}
	c.prefix = p[:star]
	rest := p[star:]
	switch n := strings.Count(rest, "*"); {
	case n == 1:
		c.shape, c.suffix = shapeOneStar, rest[1:]
	case n == 2 && strings.HasPrefix(rest, "**"):
		c.suffix = rest[2:]
		c.shape = shapeAnyMiddle
		if c.suffix == "" {
			c.shape = shapeAnyRest
		}
	default:
		if c.segments(rest) {
			return c
		}
		c.shape = shapeGeneral
		c.suffix = rest[strings.LastIndexByte(rest, '*')+1:]
	}
	return c
}

// segments compiles rest (the pattern from its first "*") as
// shapeSegments if it has that shape: every "*" followed by the end or by
// a literal that starts with a separator, and "**" only at the end.
func (c *compiled) segments(rest string) bool {
	var pieces []piece
	for rest != "" {
		if rest == "**" {
			c.rest = true
			break
		}
		if rest[0] != '*' || strings.HasPrefix(rest, "**") {
			return false
		}
		rest = rest[1:]
		end := strings.IndexByte(rest, '*')
		if end < 0 {
			end = len(rest)
		}
		lit := rest[:end]
		if end < len(rest) && lit == "" || lit != "" && lit[0] != '/' && lit[0] != '.' {
			return false
		}
		pieces = append(pieces, piece{lit})
		rest = rest[end:]
	}
	c.shape, c.pieces = shapeSegments, pieces
	return true
}

// match reports whether dest matches the pattern, exactly as
// interceptor.MatchDestination(c.pattern, dest) would.
func (c *compiled) match(dest string) bool {
	switch c.shape {
	case shapeLiteral:
		return dest == c.pattern
	case shapeAnyRest:
		return strings.HasPrefix(dest, c.prefix)
	case shapeOneStar:
		if len(dest) < len(c.prefix)+len(c.suffix) || !strings.HasPrefix(dest, c.prefix) || !strings.HasSuffix(dest, c.suffix) {
			return false
		}
		for _, b := range []byte(dest[len(c.prefix) : len(dest)-len(c.suffix)]) {
			if b == '/' || b == '.' {
				return false
			}
		}
		return true
	case shapeAnyMiddle:
		return len(dest) >= len(c.prefix)+len(c.suffix) && strings.HasPrefix(dest, c.prefix) && strings.HasSuffix(dest, c.suffix)
	case shapeSegments:
		if !strings.HasPrefix(dest, c.prefix) {
			return false
		}
		d := dest[len(c.prefix):]
		for _, p := range c.pieces {
			n := 0
			for n < len(d) && d[n] != '/' && d[n] != '.' {
				n++
			}
			if !strings.HasPrefix(d[n:], p.lit) {
				return false
			}
			d = d[n+len(p.lit):]
		}
		return d == "" || c.rest
	}
	// The literal ends rule most destinations out before the matcher,
	// which is bounded but not cheap, runs.
	if len(dest) < len(c.prefix)+len(c.suffix) || !strings.HasPrefix(dest, c.prefix) || !strings.HasSuffix(dest, c.suffix) {
		return false
	}
	return interceptor.MatchDestination(c.pattern, dest)
}

// literal returns the text every destination the pattern matches starts
// with.
func (c *compiled) literal() string {
	if c.shape == shapeLiteral {
		return c.pattern
	}
	return c.prefix
}

// lead returns the length of s up to and including its depth-th separator,
// or -1 when s has fewer.
func lead(s string, depth int) int {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' || s[i] == '.' {
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}

// key returns the index key of c at depth: its literal text up to and
// including the depth-th separator; for a literal pattern with fewer
// separators, its whole text (only a destination with fewer separators
// can equal it, and such a destination is looked up whole). ok is false
// for a pattern that must be tried for every destination.
func (c *compiled) key(depth int) (key string, ok bool) {
	lit := c.literal()
	if n := lead(lit, depth); n > 0 {
		return lit[:n], true
	}
	if c.shape == shapeLiteral {
		return lit, true
	}
	return "", false
}

// index files the patterns under their leading segments, at the depth
// that leaves the fewest patterns to try for the worst destination.
func (rs *Rules) index() {
	best, bestCost := 0, len(rs.pats)
	for d := 1; d <= maxIndexDepth; d++ {
		general, sizes := 0, map[string]int{}
		worst := 0
		for i := range rs.pats {
			if k, ok := rs.pats[i].key(d); ok {
				sizes[k]++
				worst = max(worst, sizes[k])
			} else {
				general++
			}
		}
		if cost := general + worst; cost < bestCost {
			best, bestCost = d, cost
		}
	}
	rs.depth = best
	if best > 0 {
		size := 4
		for size < 2*len(rs.pats) {
			size *= 2
		}
		rs.buckets.slots = make([]slot, size)
	}
	for i := range rs.pats {
		if k, ok := rs.pats[i].key(best); best > 0 && ok {
			rs.buckets.add(k, uint16(i))
		} else {
			rs.general = append(rs.general, uint16(i))
		}
	}
}

// Len returns the number of rules.
func (rs *Rules) Len() int {
	if rs == nil {
		return 0
	}
	return len(rs.rules)
}

// Rule returns the i-th rule, 0 <= i < Len, with defaults filled in
// (Delivery, a set limit's Window). Its Commands are a copy.
func (rs *Rules) Rule(i int) Rule {
	r := rs.rules[i]
	r.Commands = append([]string(nil), r.Commands...)
	return r
}

// Names returns the rules' names in order.
func (rs *Rules) Names() []string {
	if rs == nil {
		return nil
	}
	names := make([]string, len(rs.rules))
	for i := range rs.rules {
		names[i] = rs.rules[i].Name
	}
	return names
}

// Index returns the index of the first rule whose pattern matches dest,
// or -1 when none does. It does not allocate. dest is any bytes a client
// sent: non-UTF-8 is compared byte by byte and matches only what a
// pattern spells out byte by byte, which (patterns being UTF-8) is
// never a broken sequence outside a wildcard's run.
func (rs *Rules) Index(dest string) int {
	if rs == nil || len(rs.rules) == 0 {
		return -1
	}
	var bucket []uint16
	if rs.depth > 0 {
		// The key is dest up to its depth-th separator, or all of dest
		// (see compiled.key).
		key := dest
		if n := lead(dest, rs.depth); n > 0 {
			key = dest[:n]
		}
		bucket = rs.buckets.get(key)
	}
	general := rs.general
	// Merge the two ascending lists, trying rules in policy order.
	for len(bucket) > 0 || len(general) > 0 {
		var i uint16
		if len(general) == 0 || (len(bucket) > 0 && bucket[0] < general[0]) {
			i, bucket = bucket[0], bucket[1:]
		} else {
			i, general = general[0], general[1:]
		}
		if rs.pats[i].match(dest) {
			return int(i)
		}
	}
	return -1
}

// Match returns the first rule whose pattern matches dest, as Rule does,
// and whether there is one. It allocates only for the copy of the rule's
// Commands; the per-frame path uses Index or Options.
func (rs *Rules) Match(dest string) (Rule, bool) {
	i := rs.Index(dest)
	if i < 0 {
		return Rule{}, false
	}
	return rs.Rule(i), true
}

// Options is what the delivery side needs of the rule that applies to a
// destination.
type Options struct {
	// Rule is the rule's name, "" when no rule matches.
	Rule string
	// Latest is true when the rule's Delivery is DeliveryLatest.
	Latest bool
	// MaxSubscribers is the rule's MaxSubscribers; 0 means no cap.
	MaxSubscribers int
}

// Options returns the delivery options of the first rule matching dest;
// the zero Options when none does. It does not allocate.
func (rs *Rules) Options(dest string) Options {
	i := rs.Index(dest)
	if i < 0 {
		return Options{}
	}
	r := &rs.rules[i]
	return Options{Rule: r.Name, Latest: r.Delivery == DeliveryLatest, MaxSubscribers: r.MaxSubscribers}
}

// PrincipalLimit returns the per-principal limit of the first rule
// matching dest: the rule's name, its Principal limit and window, and ok
// true; ok is false when no rule matches or the rule that does has no
// per-principal limit. It does not allocate.
func (rs *Rules) PrincipalLimit(dest string) (rule string, limit int, window time.Duration, ok bool) {
	i := rs.Index(dest)
	if i < 0 || !rs.rules[i].Principal.IsSet() {
		return "", 0, 0, false
	}
	r := &rs.rules[i]
	return r.Name, r.Principal.Limit, r.Principal.Window, true
}
