package nginx

import (
	"bytes"
	_ "embed"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/stompgate/stompgate/policy"
)

//go:embed nginx.conf.tmpl
var confTemplate string

// tmpl is parsed once; the template is a constant of the package, and a
// test renders it, so Must cannot fail in a built binary.
var tmpl = template.Must(template.New("nginx.conf").Funcs(template.FuncMap{"join": strings.Join}).Parse(confTemplate))

// Upstream block names in the rendered configuration.
const (
	wsUpstreamName  = "stompgate_ws"
	apiUpstreamName = "stompgate_api"
)

// Render returns a complete nginx.conf that enforces p in front of the
// servers cfg names. For each zone it renders a limit_req_zone keyed by the
// client IP; for each route path a location (exact "=" for fixed paths, a
// regular expression for paths with {name} segments) with limit_req
// zone=<name> burst=<n> nodelay for every zone that lists it; 429 answers
// with a small JSON body and a Retry-After header; and the WebSocket proxy
// settings on ws locations. Requests no route matches go to the API
// unlimited.
//
// A zone whose routes name a Method is keyed by a map of $request_method
// that yields an empty key for other methods, because nginx does not count
// requests with an empty key and limit_req cannot be placed inside if.
//
// A zone with MaxConnections also gets a limit_conn_zone, named
// <name>-conn (policy zone names cannot hold "-", so it never meets a
// limit_req zone's name), and limit_conn <name>-conn <n> on each of its
// locations, with limit_conn_status 429: nginx then refuses the (n+1)th
// connection one client IP holds open, as the wsserver does, with
// Retry-After policy.CapRetryAfter (a map of $limit_conn_status, nginx
// 1.17.6 or later).
//
// The access log writes the method, $uri (the path, without its query)
// and protocol instead of the request line: browsers cannot set headers on
// a WebSocket handshake, so a token travels as ?access_token=, and it must
// not land in a log.
//
// Retry-After is the number of seconds in which the zone's rate earns one
// request back, ceil(1000/Rate), at least 1. A location limited by several
// zones announces the largest of their values, since nginx does not say
// which zone refused. Each distinct value gets its own map of
// $limit_req_status (nginx 1.17.6 or later) and named 429 location.
//
// Render reports an invalid policy with p.Validate's error, and a bad
// setting with an error that matches ErrInvalidConfig.
func Render(p policy.Policy, cfg Config) ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	data, err := newRenderData(p, cfg)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, data); err != nil {
		return nil, fmt.Errorf("nginx: rendering the template: %w", err)
	}
	return buf.Bytes(), nil
}

// renderData is what the template reads.
type renderData struct {
	Config
	ReadTimeoutText string
	RlimitNofile    int
	TempPaths       []tempPath
	Zones           []zoneData
	ConnZones       []connZone
	KeyMaps         []keyMap
	RetryAfters     []int
	// CapRetryAfter is the Retry-After of a limit_conn refusal, in
	// seconds; 0 when no zone caps connections.
	CapRetryAfter int
	Locations     []*location
	WSUpstream    string
	APIUpstream   string
}

// tempPath is one *_temp_path directive.
type tempPath struct {
	Directive, Path string
}

// zoneData is one limit_req_zone.
type zoneData struct {
	Name, Key, Size, Rate string
	Burst                 int
	Routes                string
}

// connZone is one limit_conn_zone.
type connZone struct {
	Name, Key, Size, Zone string
	Max                   int
}

// connZoneSuffix names a zone's limit_conn_zone after its limit_req_zone.
const connZoneSuffix = "-conn"

// keyMap maps $request_method to the client address for one method.
type keyMap struct {
	Var, Method string
}

// location is one location block.
type location struct {
	// Match follows the location keyword: "= /rooms" or `~ "^/rooms/..$"`.
	Match string
	// Routes lists the routes served here, for the comment.
	Routes []string
	// WebSocket selects the WebSocket proxy settings and the ws upstream.
	WebSocket bool
	// Limits are the limit_req directives.
	Limits []limit
	// ConnLimits are the limit_conn directives.
	ConnLimits []connZone
	// RetryAfter is the Retry-After of 429 answers here, in seconds; 0 when
	// the location is not limited.
	RetryAfter int
}

// limit is one limit_req directive. A zero Burst is rendered by leaving
// the burst parameter out: nginx rejects "burst=0", and 0 is its default.
type limit struct {
	Zone, Rate string
	Burst      int
}

// newRenderData lays p out for cfg, whose defaults are filled.
func newRenderData(p policy.Policy, cfg Config) (*renderData, error) {
	d := &renderData{
		Config:          cfg,
		ReadTimeoutText: duration(cfg.ReadTimeout),
		RlimitNofile:    2 * cfg.WorkerConnections,
		WSUpstream:      wsUpstreamName,
		APIUpstream:     apiUpstreamName,
	}
	if cfg.TempPath != "" {
		for _, name := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
			d.TempPaths = append(d.TempPaths, tempPath{
				Directive: name + "_temp_path",
				Path:      path.Join(cfg.TempPath, name+"_temp"),
			})
		}
	}

	// The WebSocket endpoint always has a location, limited or not.
	byMatch := map[string]*location{}
	wsLoc := &location{Match: "= " + cfg.WSPath, WebSocket: true}
	byMatch[wsLoc.Match] = wsLoc
	d.Locations = append(d.Locations, wsLoc)

	keyVars := map[string]bool{}
	retries := map[int]bool{}
	for _, z := range p.Zones {
		size := z.Size
		if size == "" {
			size = policy.DefaultSize
		}
		key := "$binary_remote_addr"
		if m := z.Routes[0].Method; m != "" { // Validate: one method per zone
			key = "$stompgate_key_" + strings.ToLower(m)
			if !keyVars[key] {
				keyVars[key] = true
				d.KeyMaps = append(d.KeyMaps, keyMap{Var: key, Method: m})
			}
		}
		routes := make([]string, len(z.Routes))
		for i, r := range z.Routes {
			routes[i] = r.String()
		}
		d.Zones = append(d.Zones, zoneData{
			Name: z.Name, Key: key, Size: size, Rate: z.Rate.String(), Burst: z.Burst,
			Routes: strings.Join(routes, ", "),
		})

		var conn *connZone
		if z.MaxConnections > 0 {
			d.ConnZones = append(d.ConnZones, connZone{
				Name: z.Name + connZoneSuffix, Key: key, Size: size, Zone: z.Name, Max: z.MaxConnections,
			})
			conn = &d.ConnZones[len(d.ConnZones)-1]
			d.CapRetryAfter = int((policy.CapRetryAfter + time.Second - 1) / time.Second)
		}

		retry := retryAfterSeconds(z.Rate)
		for _, r := range z.Routes {
			match := locationMatch(r.Path)
			loc := byMatch[match]
			if loc == nil {
				loc = &location{Match: match, WebSocket: r.Upstream == policy.UpstreamWS}
				byMatch[match] = loc
				d.Locations = append(d.Locations, loc)
			}
			if loc == wsLoc && r.Upstream != policy.UpstreamWS {
				return nil, configErrorf("WSPath %q is also route %q of zone %q, which goes to upstream %s; the WebSocket endpoint needs upstream %s",
					cfg.WSPath, r, z.Name, r.Upstream, policy.UpstreamWS)
			}
			loc.Routes = append(loc.Routes, fmt.Sprintf("%s (%s)", r, z.Name))
			loc.Limits = append(loc.Limits, limit{Zone: z.Name, Rate: z.Rate.String(), Burst: z.Burst})
			if conn != nil {
				loc.ConnLimits = append(loc.ConnLimits, *conn)
			}
			loc.RetryAfter = max(loc.RetryAfter, retry)
		}
	}
	if len(wsLoc.Routes) == 0 {
		wsLoc.Routes = []string{cfg.WSPath + " (not limited by the policy)"}
	}
	for _, loc := range d.Locations {
		if loc.RetryAfter > 0 {
			retries[loc.RetryAfter] = true
		}
	}
	for s := range retries {
		d.RetryAfters = append(d.RetryAfters, s)
	}
	slices.Sort(d.RetryAfters)
	return d, nil
}

// retryAfterSeconds is the Retry-After for a zone: the whole seconds in
// which rate earns one request back, ceil(1000/rate), at least 1.
func retryAfterSeconds(r policy.Rate) int {
	return int((1000 + int64(r) - 1) / int64(r))
}

// paramRE matches a {name} path segment.
var paramRE = regexp.MustCompile(`^\{[A-Za-z_][A-Za-z0-9_]*\}$`)

// locationMatch returns what follows "location" for a route path: an exact
// match for a fixed path, or an anchored, case-sensitive regular expression
// in which each {name} segment matches one non-empty segment. The path is
// valid (policy.Validate), so literal segments hold only letters, digits and
// -._~, and QuoteMeta leaves nothing the nginx parser would read as syntax
// inside the quotes.
func locationMatch(p string) string {
	segs := strings.Split(p, "/")
	fixed := true
	for i, seg := range segs {
		if paramRE.MatchString(seg) {
			segs[i] = "[^/]+"
			fixed = false
		} else {
			segs[i] = regexp.QuoteMeta(seg)
		}
	}
	if fixed {
		return "= " + p
	}
	return `~ "^` + strings.Join(segs, "/") + `$"`
}
