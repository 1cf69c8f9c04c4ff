package policy

import (
	_ "embed"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Names of the zones in the default policy, for code that looks them up
// with Policy.Zone.
const (
	// ZoneHandshake limits WebSocket handshakes (GET /ws) per client IP.
	ZoneHandshake = "ws_handshake"
	// ZoneRoomCreate limits room creation (POST /rooms) per client IP.
	ZoneRoomCreate = "room_create"
	// ZoneRoomJoin limits room joins (POST /rooms/{id}/join) per client IP.
	ZoneRoomJoin = "room_join"
)

// Upstreams a route can be sent to.
const (
	// UpstreamWS is the pool of wsserver instances, which speak STOMP over
	// WebSocket.
	UpstreamWS = "ws"
	// UpstreamAPI is the application's HTTP API.
	UpstreamAPI = "api"
)

// KeyClientIP keys a zone by the client's IP address, rendered for nginx as
// $binary_remote_addr (4 bytes for IPv4, 16 for IPv6, so a state stays
// small). It is the only key a zone can have.
const KeyClientIP = "client_ip"

// DefaultSize is a zone's shared-memory size when the policy does not set
// one. nginx keeps about 16,000 IPv4 states per megabyte, so 10m tracks
// about 160,000 clients; when it fills, nginx evicts the least recently used
// states and, if that is not enough, answers 429 to new clients.
const DefaultSize = "10m"

// MaxBurst is the largest Burst accepted. nginx counts burst in the same
// milli-request unit as Rate; the bound keeps it far from overflow, and a
// burst this large is no limit at all.
const MaxBurst = 1_000_000

// MaxMaxConnections is the largest MaxConnections accepted: nginx's
// limit_conn refuses a number above 65535.
const MaxMaxConnections = 65535

// CapRetryAfter is the Retry-After of a connection refused because its key
// already holds MaxConnections sessions, in the rendered nginx
// configuration and in the wsserver alike. A session cap frees a slot when
// a session ends, which no rate predicts; the refusal a person meets at
// the cap is mostly a page reload whose new socket arrives before the old
// one's close, which the server sees within a round trip, so a retry 2
// seconds later passes, and a client that obeys it costs less than the
// handshake rate allows.
const CapRetryAfter = 2 * time.Second

// minSizeBytes is the smallest zone nginx accepts: eight memory pages of
// 4 KiB ("zone is too small" below that).
const minSizeBytes = 8 * 4096

// Route is one HTTP request shape a zone limits.
type Route struct {
	// Method is the HTTP method the limit applies to, in upper case
	// ("POST"). Empty means every method. Requests with another method pass
	// unlimited.
	Method string
	// Path is the request path, matched exactly: "/ws", "/rooms". A segment
	// written {name} stands for any one non-empty segment, so
	// "/rooms/{id}/join" matches "/rooms/abc/join" but not "/rooms/join" or
	// "/rooms/a/b/join". Literal segments use letters, digits and "-._~".
	Path string
	// Upstream names where nginx sends the request: UpstreamWS or
	// UpstreamAPI.
	Upstream string
}

// String returns the route as "METHOD /path", or "/path" when Method is
// empty.
func (r Route) String() string {
	if r.Method == "" {
		return r.Path
	}
	return r.Method + " " + r.Path
}

// Zone is one leaky bucket per key (per client IP), as in nginx's
// limit_req_zone: the bucket drains at Rate and holds Burst requests above
// it. A new client may send Burst+1 requests at once; after that one
// request per Rate.Interval passes, and the rest are refused with 429.
//
// The zero Zone is not valid: it needs a Name, a Rate and at least one
// Route.
type Zone struct {
	// Name identifies the zone in nginx (zone=<Name>) and in lookups:
	// lower-case letters, digits and "_", starting with a letter.
	Name string
	// Key is what the zone counts by. Only KeyClientIP is supported; empty
	// means KeyClientIP.
	Key string
	// Rate is the sustained rate each key may keep up. It must be positive
	// and exact in nginx syntax (see ParseRate).
	Rate Rate
	// Burst is how many requests above Rate a key may send at once before
	// being refused. Zero allows no excess; negative is invalid.
	Burst int
	// MaxConnections caps the sessions (nginx: connections being
	// processed) each key may hold open at once on the zone's routes:
	// rendered for nginx as limit_conn_zone and limit_conn, and enforced
	// by the wsserver on the WebSocket handshake zone across all its
	// instances. A refusal is 429 with Retry-After CapRetryAfter. Zero
	// means no cap; negative or above MaxMaxConnections is invalid.
	MaxConnections int
	// Size is the zone's shared memory in nginx size syntax ("10m",
	// "512k"), at least 32k. Empty means DefaultSize.
	Size string
	// Routes are the requests the zone limits; at least one. All routes of
	// a zone share one Method, because nginx computes a zone's key once per
	// request, before it knows which route matched (see Validate).
	Routes []Route
}

// Policy is the rate-limit policy shared by the wsserver's handshake limiter
// and the rendered nginx configuration. It is a plain value; Validate says
// whether it can be enforced. Zones keep their order, which is the order of
// the rendered nginx locations.
type Policy struct {
	// Zones are the limits, each with a unique Name.
	Zones []Zone
	// Destinations are the rules for STOMP destinations, in the order
	// they are tried: the first whose pattern matches a destination
	// applies (see Rule and NewRules). None means every destination keeps
	// the server's defaults. They are enforced by the wsserver only:
	// nginx sees no STOMP frame, so nothing of them is rendered there.
	Destinations []Rule
}

//go:embed default.yaml
var defaultYAML []byte

// defaultPolicy parses default.yaml once.
var defaultPolicy = sync.OnceValues(func() (Policy, error) {
	return Parse(defaultYAML)
})

// Default returns the compiled-in policy, parsed from the embedded
// default.yaml:
//
//	ws_handshake  3r/s  burst 5   max 100 open  GET  /ws               → ws
//	room_create   2r/s  burst 4                 POST /rooms            → api
//	room_join     5r/s  burst 10                POST /rooms/{id}/join  → api
//
// Each call returns a fresh copy that the caller may modify. The package's
// tests parse default.yaml, so Default can only panic in a binary built from
// an edited, invalid default.yaml, like a regexp.MustCompile of a constant.
func Default() Policy {
	p, err := defaultPolicy()
	if err != nil {
		panic("policy: embedded default.yaml is invalid: " + err.Error())
	}
	return p.clone()
}

// Load reads and parses the policy file at path. An empty path means the
// compiled-in policy, Default().
func Load(path string) (Policy, error) {
	if path == "" {
		return Default(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Policy{}, fmt.Errorf("policy: %w", err) // *fs.PathError names the file
	}
	p, err := parse(data)
	if err != nil {
		return Policy{}, prefixed("policy: "+path+": ", err)
	}
	return p, nil
}

// Zone returns the zone called name and whether it exists. The returned
// zone's Routes are a copy.
func (p Policy) Zone(name string) (Zone, bool) {
	for _, z := range p.Zones {
		if z.Name == name {
			z.Routes = slices.Clone(z.Routes)
			return z, true
		}
	}
	return Zone{}, false
}

// clone returns a deep copy of p.
func (p Policy) clone() Policy {
	zones := slices.Clone(p.Zones)
	for i := range zones {
		zones[i].Routes = slices.Clone(zones[i].Routes)
	}
	return Policy{Zones: zones, Destinations: cloneRules(p.Destinations)}
}

var (
	zoneNameRE    = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	methodRE      = regexp.MustCompile(`^[A-Z]+$`)
	sizeRE        = regexp.MustCompile(`^([0-9]+)([kKmM]?)$`)
	literalSegRE  = regexp.MustCompile(`^[A-Za-z0-9._~-]+$`)
	paramSegRE    = regexp.MustCompile(`^\{[A-Za-z_][A-Za-z0-9_]*\}$`)
	dotSegmentsRE = regexp.MustCompile(`^\.\.?$`)
)

// Validate reports the first problem that keeps p from being enforced,
// naming the zone and field: `policy: zone "ws_handshake": burst -1 is
// negative`. It checks that
//
//   - there is at least one zone, and zone names are unique and well formed;
//   - Key is empty or KeyClientIP, Size is empty or an nginx size of at
//     least 32k;
//   - Rate is positive, at most MaxRate and exact in nginx syntax; Burst is
//     between 0 and MaxBurst; MaxConnections between 0 and
//     MaxMaxConnections;
//   - each zone has routes, all with the same Method (nginx evaluates a
//     zone's key once per request, so "POST only" must hold for the whole
//     zone), no route is repeated within a zone, paths are well formed, and
//     Upstream is UpstreamWS or UpstreamAPI;
//   - a path sent to one upstream by one zone is not sent to the other by
//     another zone (a path has one nginx location, with one proxy_pass);
//   - there are at most MaxRules destination rules, each valid (see Rule),
//     with unique names and patterns; their errors name the rule by index
//     and name, and the field: `policy: destinations[2] "chat":
//     send.window: -1s is negative`.
//
// The returned error matches ErrInvalid.
func (p Policy) Validate() error {
	return prefixed("policy: ", p.validate())
}

// validate is Validate without the package prefix.
func (p Policy) validate() error {
	if len(p.Zones) == 0 {
		return invalidf("no zones")
	}
	seen := make(map[string]bool, len(p.Zones))
	upstreamOf := make(map[string]string) // path pattern → upstream
	zoneOf := make(map[string]string)     // path pattern → first zone
	for _, z := range p.Zones {
		if err := z.validate(); err != nil {
			return err
		}
		if seen[z.Name] {
			return invalidf("zone %q is defined twice", z.Name)
		}
		seen[z.Name] = true
		for _, r := range z.Routes {
			pat := pathPattern(r.Path)
			if up, ok := upstreamOf[pat]; ok && up != r.Upstream {
				return invalidf("zone %q: route %q: upstream %s differs from upstream %s of the same path in zone %q",
					z.Name, r, r.Upstream, up, zoneOf[pat])
			}
			upstreamOf[pat], zoneOf[pat] = r.Upstream, z.Name
		}
	}
	return validateRules(p.Destinations)
}

// validate checks one zone in isolation.
func (z Zone) validate() error {
	if !zoneNameRE.MatchString(z.Name) {
		if z.Name == "" {
			return invalidf("zone with no name")
		}
		return invalidf("zone %q: name must be lower-case letters, digits and _, starting with a letter", z.Name)
	}
	errf := func(format string, args ...any) error {
		return invalidf("zone %q: "+format, append([]any{z.Name}, args...)...)
	}
	if z.Key != "" && z.Key != KeyClientIP {
		return errf("key %q is not %s", z.Key, KeyClientIP)
	}
	switch {
	case z.Rate <= 0:
		return errf("rate %s is not positive", z.Rate)
	case z.Rate > MaxRate:
		return errf("rate %s is above the maximum %s", z.Rate, MaxRate)
	case !z.Rate.exact():
		return errf("rate %s cannot be written in nginx syntax (whole r/s or r/m)", z.Rate)
	}
	switch {
	case z.Burst < 0:
		return errf("burst %d is negative", z.Burst)
	case z.Burst > MaxBurst:
		return errf("burst %d is above the maximum %d", z.Burst, MaxBurst)
	}
	switch {
	case z.MaxConnections < 0:
		return errf("max_connections %d is negative", z.MaxConnections)
	case z.MaxConnections > MaxMaxConnections:
		return errf("max_connections %d is above nginx's maximum %d", z.MaxConnections, MaxMaxConnections)
	}
	if z.Size != "" {
		if err := checkSize(z.Size); err != nil {
			return errf("%v", err)
		}
	}
	if len(z.Routes) == 0 {
		return errf("no routes")
	}
	routes := make(map[string]bool, len(z.Routes))
	for _, r := range z.Routes {
		if err := r.validate(); err != nil {
			return errf("route %q: %v", r, err)
		}
		if r.Method != z.Routes[0].Method {
			return errf("route %q: method %q differs from method %q of route %q; a zone limits one method (or all)",
				r, r.Method, z.Routes[0].Method, z.Routes[0])
		}
		pat := pathPattern(r.Path)
		if routes[pat] {
			return errf("route %q is listed twice", r)
		}
		routes[pat] = true
	}
	return nil
}

// checkSize validates an nginx zone size.
func checkSize(s string) error {
	m := sizeRE.FindStringSubmatch(s)
	if m == nil {
		return invalidf("size %q is not an nginx size (<n>, <n>k or <n>m)", s)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	scale := map[string]int64{"": 1, "k": 1 << 10, "K": 1 << 10, "m": 1 << 20, "M": 1 << 20}[m[2]]
	if err != nil || n > (1<<40)/scale {
		return invalidf("size %q is too large", s)
	}
	if n*scale < minSizeBytes {
		return invalidf("size %q is below nginx's minimum of 32k", s)
	}
	return nil
}

// validate checks one route's fields.
func (r Route) validate() error {
	if r.Method != "" && !methodRE.MatchString(r.Method) {
		return invalidf("method %q is not an upper-case HTTP method", r.Method)
	}
	if err := checkPath(r.Path); err != nil {
		return err
	}
	if r.Upstream != UpstreamWS && r.Upstream != UpstreamAPI {
		return invalidf("upstream %q is not %s or %s", r.Upstream, UpstreamWS, UpstreamAPI)
	}
	return nil
}

// checkPath validates a route path: "/" or "/"-separated segments, each a
// literal or a {name} parameter, with an optional trailing "/".
func checkPath(path string) error {
	if !strings.HasPrefix(path, "/") {
		return invalidf("path %q does not start with /", path)
	}
	if path == "/" {
		return nil
	}
	segs := strings.Split(strings.TrimSuffix(path[1:], "/"), "/")
	for _, seg := range segs {
		switch {
		case seg == "":
			return invalidf("path %q has an empty segment", path)
		case paramSegRE.MatchString(seg):
		case dotSegmentsRE.MatchString(seg):
			return invalidf("path %q has a dot segment %q, which nginx removes before matching", path, seg)
		case !literalSegRE.MatchString(seg):
			return invalidf("path %q: segment %q is neither a {name} parameter nor letters, digits and -._~", path, seg)
		}
	}
	return nil
}

// pathPattern returns path with every {name} parameter written as {}, so
// that "/rooms/{id}" and "/rooms/{room}" compare equal.
func pathPattern(path string) string {
	segs := strings.Split(path, "/")
	for i, seg := range segs {
		if paramSegRE.MatchString(seg) {
			segs[i] = "{}"
		}
	}
	return strings.Join(segs, "/")
}
