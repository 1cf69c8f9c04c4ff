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

//go:embed include.conf.tmpl
var includeTemplate string

//go:embed nginx.conf.tmpl
var fullTemplate string

// includeTmpl renders the http-context directives and fullTmpl wraps them
// in a complete nginx.conf. Both are constants of the package, and tests
// render them, so Must cannot fail in a built binary.
var (
	includeTmpl = template.Must(template.New("include.conf").Funcs(template.FuncMap{"join": strings.Join}).Parse(includeTemplate))
	fullTmpl    = template.Must(template.New("nginx.conf").Parse(fullTemplate))
)

// Upstream block names in the rendered configuration.
const (
	wsUpstreamName  = "stompgate_ws"
	apiUpstreamName = "stompgate_api"
)

// Render returns the nginx configuration that enforces p in front of the
// servers cfg names: by default a file of http-context directives for
// /etc/nginx/conf.d/, with cfg.Full a complete nginx.conf. For each zone
// it renders a limit_req_zone keyed by the client (its IPv4 address, or
// its IPv6 address cut to cfg.IPv6Prefix bits); for each route path
// a location (exact "=" for fixed paths, a regular expression for paths
// with {name} segments) with limit_req zone=<name> burst=<n> nodelay for
// every zone that lists it; 429 answers with a small JSON body and a
// Retry-After header; and the WebSocket proxy settings on cfg.WSPath.
//
// Every route to the ws upstream is rendered on cfg.WSPath, the one
// endpoint the wsserver serves, so the limit lands where the handshakes
// arrive. Routes to the api upstream are rendered only when cfg names API
// upstreams; a zone left without routes is left out, and the file's
// header comment lists what was. Requests no route matches (the demo page,
// /healthz, /readyz) go to the wsserver unlimited, except /metrics, which
// nginx answers 404: behind a balancer it would show one instance at
// random, so Prometheus scrapes each instance directly.
//
// With cfg.TLSCert and cfg.TLSKey the server listens with TLS on
// cfg.TLSListen, and the plain HTTP server on cfg.Listen only redirects
// to it (308, which keeps a POST a POST).
//
// A zone limited to one Method is keyed by a map of $request_method that
// yields an empty key for other methods, because nginx does not count
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
// Everything an included file defines at http level is named stompgate_
// (variables, upstreams, the log format) or after a policy zone, and the
// directives nginx.conf usually sets (default_type, server_tokens,
// error_log, the limit statuses) are set inside stompgate's servers or not
// at all, so the file sits beside the distribution's configuration
// without a duplicate.
//
// The client key is a map of $remote_addr: nginx has no function that
// masks an address, so regular expressions cut the first cfg.IPv6Prefix/16
// groups from the compressed text nginx prints (see clientKeyRules). That
// is why the prefix must be a multiple of 16; the wsserver accepts any
// length, and the two must be set alike. The keys are text of up to 24
// bytes at /64 (39 at /128), so a zone state may take 128 bytes where
// nginx's documentation gives 64 for a 4-byte $binary_remote_addr.
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
	if err := includeTmpl.Execute(&buf, data); err != nil {
		return nil, fmt.Errorf("nginx: rendering the template: %w", err)
	}
	if !cfg.Full {
		return buf.Bytes(), nil
	}
	data.HTTP = indent(buf.String(), "    ")
	var full bytes.Buffer
	if err := fullTmpl.Execute(&full, data); err != nil {
		return nil, fmt.Errorf("nginx: rendering the template: %w", err)
	}
	return full.Bytes(), nil
}

// indent prefixes every non-empty line of s with prefix.
func indent(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "\n" && l != "" {
			b.WriteString(prefix)
		}
		b.WriteString(l)
	}
	return b.String()
}

// renderData is what the templates read.
type renderData struct {
	Config
	ReadTimeoutText string
	RlimitNofile    int
	TempPaths       []tempPath
	Zones           []zoneData
	ConnZones       []connZone
	KeyMaps         []keyMap
	// ClientKey is the variable the limits key by, and KeyRules the
	// regular expressions of its map (clientKeyRules).
	ClientKey   string
	KeyRules    []keyRule
	RetryAfters []int
	// CapRetryAfter is the Retry-After of a limit_conn refusal, in
	// seconds; 0 when no zone caps connections.
	CapRetryAfter int
	Locations     []*location
	WSUpstream    string
	// APIUpstream is the API upstream's name; empty when no location
	// uses it.
	APIUpstream string
	// Skipped lists the api routes left out for want of an API upstream,
	// for the header comment.
	Skipped []string
	// TLS is set when the server listens with TLS.
	TLS bool
	// RedirectPort is ":<port>" in the HTTPS redirect when TLSListen's
	// port is not 443, else empty.
	RedirectPort string
	// HTTP is the rendered http-context directives, indented, for the
	// full nginx.conf.
	HTTP string
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
		TLS:             cfg.TLSCert != "",
		ClientKey:       clientKeyVar,
		KeyRules:        clientKeyRules(cfg.IPv6Prefix),
	}
	if port := listenPort(cfg.TLSListen); port != "443" {
		d.RedirectPort = ":" + port
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
		var routes []policy.Route
		for _, r := range z.Routes {
			if r.Upstream == policy.UpstreamAPI && len(cfg.APIUpstreams) == 0 {
				d.Skipped = append(d.Skipped, fmt.Sprintf("%s (%s)", r, z.Name))
				continue
			}
			routes = append(routes, r)
		}
		if len(routes) == 0 {
			continue
		}
		size := z.Size
		if size == "" {
			size = policy.DefaultSize
		}
		key := clientKeyVar
		if m := routes[0].Method; m != "" { // Validate: one method per zone
			key = "$stompgate_key_" + strings.ToLower(m)
			if !keyVars[key] {
				keyVars[key] = true
				d.KeyMaps = append(d.KeyMaps, keyMap{Var: key, Method: m})
			}
		}
		names := make([]string, len(routes))
		for i, r := range routes {
			names[i] = r.String()
			if r.Upstream == policy.UpstreamWS && r.Path != cfg.WSPath {
				names[i] += " on " + cfg.WSPath
			}
		}
		d.Zones = append(d.Zones, zoneData{
			Name: z.Name, Key: key, Size: size, Rate: z.Rate.String(), Burst: z.Burst,
			Routes: strings.Join(names, ", "),
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
		for _, r := range routes {
			match := locationMatch(r.Path)
			if r.Upstream == policy.UpstreamWS {
				match = wsLoc.Match
			}
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
			if !loc.WebSocket {
				d.APIUpstream = apiUpstreamName
			}
			desc := fmt.Sprintf("%s (%s)", r, z.Name)
			if r.Upstream == policy.UpstreamWS && r.Path != cfg.WSPath {
				desc = fmt.Sprintf("%s on %s (%s)", r, cfg.WSPath, z.Name)
			}
			loc.Routes = append(loc.Routes, desc)
			if slices.ContainsFunc(loc.Limits, func(l limit) bool { return l.Zone == z.Name }) {
				continue // two ws routes of one zone, both on WSPath
			}
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
