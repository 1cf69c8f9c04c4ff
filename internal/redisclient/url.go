// Package redisclient builds the Redis clients that the server's
// adapters share (the handshake limiter, the session caps, the relay, the
// app stream) from one URL form, with socket timeouts fit for a limiter,
// and checks at start-up that a Redis will not evict their keys.
package redisclient

import (
	"errors"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Socket timeouts of New, each applied when the URL leaves
// it unset (dial_timeout=, read_timeout=, write_timeout=).
const (
	// DefaultDialTimeout bounds opening a connection. A node on the
	// same network connects in a millisecond; one that takes a second is
	// as good as down, and the next attempt comes soon.
	DefaultDialTimeout = time.Second
	// DefaultReadTimeout bounds waiting for a reply where the caller
	// set no deadline (go-redis' default is 3 s). A healthy Redis
	// answers the largest pipeline the relay sends in milliseconds; a
	// Cluster slot-map reload that meets a paused node gives up on it
	// after this and asks the next one.
	DefaultReadTimeout = 500 * time.Millisecond
	// DefaultWriteTimeout bounds writing a command, for the same reason.
	DefaultWriteTimeout = 500 * time.Millisecond
)

// socketTimeouts fills the timeouts the URL left at zero.
func socketTimeouts(dial, read, write *time.Duration) {
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{dial, DefaultDialTimeout}, {read, DefaultReadTimeout}, {write, DefaultWriteTimeout}} {
		if *d.v == 0 {
			*d.v = d.def
		}
	}
}

// New builds a Redis client from a URL (the -redis-url and
// -app-redis-url settings). The
// accepted forms are:
//
//	redis://[[user]:password@]host[:port][/db][?option=value...]
//	rediss://...                                   the same over TLS
//	unix://[[user]:password@]/path/to/socket[?db=N&...]
//	redis+sentinel://[[user]:password@]host:port[,host:port...]/master[/db][?option=value...]
//	rediss+sentinel://...                          the same over TLS
//	redis+cluster://[[user]:password@]host:port[,host:port...][?option=value...]
//	rediss+cluster://...                           the same over TLS
//
// Host defaults to localhost, port to 6379 (26379 for Sentinels), db to 0.
// For Sentinel, the hosts are the Sentinels, master is the monitored
// master's name, and the user and password authenticate to the Sentinels
// and to the master (options username= and password= give the master
// different ones). For Cluster, the hosts are seed nodes; db is not
// supported. Options are go-redis' URL options in snake case
// (dial_timeout=1s, pool_size=20, ...); unknown ones are errors.
//
// The client always has ContextTimeoutEnabled set, so a per-call context
// deadline (handshake.RedisConfig.Timeout) also bounds a server that accepts the
// connection but never answers. Socket timeouts the URL leaves unset (or
// zero) are DefaultDialTimeout, DefaultReadTimeout and
// DefaultWriteTimeout, below go-redis' own: they bound the calls that
// carry no deadline of their own, above all a Cluster client's reload of
// its slot map, which must skip a paused node quickly to find the
// replica promoted in its place. The caller closes the client.
//
// Errors name the setting and never repeat the password.
func New(rawURL string) (redis.UniversalClient, error) {
	if rawURL == "" {
		return nil, urlErrorf("Redis URL is empty")
	}
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return nil, urlError(rawURL, errors.New("missing scheme, want redis://, rediss://, unix://, redis+sentinel:// or redis+cluster://"))
	}
	switch scheme {
	case "redis", "rediss", "unix":
		opt, err := redis.ParseURL(rawURL)
		if err != nil {
			return nil, urlError(rawURL, err)
		}
		opt.ContextTimeoutEnabled = true
		socketTimeouts(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout)
		return redis.NewClient(opt), nil
	case "redis+sentinel", "rediss+sentinel":
		opt, err := parseSentinelURL(strings.TrimSuffix(scheme, "+sentinel"), rest)
		if err != nil {
			return nil, urlError(rawURL, err)
		}
		opt.ContextTimeoutEnabled = true
		socketTimeouts(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout)
		return redis.NewFailoverClient(opt), nil
	case "redis+cluster", "rediss+cluster":
		opt, err := parseClusterURL(strings.TrimSuffix(scheme, "+cluster"), rest)
		if err != nil {
			return nil, urlError(rawURL, err)
		}
		opt.ContextTimeoutEnabled = true
		socketTimeouts(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout)
		return redis.NewClusterClient(opt), nil
	default:
		return nil, urlError(rawURL, errors.New("unknown scheme "+strings.ToValidUTF8(scheme, "?")+
			", want redis, rediss, unix, redis+sentinel, rediss+sentinel, redis+cluster or rediss+cluster"))
	}
}

// multiHostURL is a URL whose authority may list several host:port pairs.
type multiHostURL struct {
	userinfo string // "user:password@" or ""
	hosts    []string
	path     string // from the first '/' after the authority, without query
	query    url.Values
}

// splitMultiHost splits the part of a URL after "://"; hosts without a
// port get defaultPort.
func splitMultiHost(rest, defaultPort string) (multiHostURL, error) {
	var u multiHostURL
	rest, rawQuery, _ := strings.Cut(rest, "?")
	authority, path, hasPath := strings.Cut(rest, "/")
	if hasPath {
		u.path = "/" + path
	}
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		u.userinfo, authority = authority[:i+1], authority[i+1:]
	}
	for _, h := range strings.Split(authority, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(strings.Trim(h, "[]"), defaultPort)
		}
		u.hosts = append(u.hosts, h)
	}
	if len(u.hosts) == 0 {
		return u, errors.New("no host")
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return u, err
	}
	u.query = q
	return u, nil
}

// single rebuilds a one-host URL for go-redis' parsers: the first host in
// the authority, the others as addr= options.
func (u multiHostURL) single(scheme, path string) string {
	q := url.Values{}
	for k, v := range u.query {
		q[k] = v
	}
	for _, h := range u.hosts[1:] {
		q.Add("addr", h)
	}
	s := scheme + "://" + u.userinfo + u.hosts[0] + path
	if len(q) > 0 {
		s += "?" + q.Encode()
	}
	return s
}

func parseSentinelURL(scheme, rest string) (*redis.FailoverOptions, error) {
	u, err := splitMultiHost(rest, "26379")
	if err != nil {
		return nil, err
	}
	segs := strings.FieldsFunc(u.path, func(r rune) bool { return r == '/' })
	if len(segs) == 0 || len(segs) > 2 {
		return nil, errors.New("path must be /master or /master/db")
	}
	master, err := url.PathUnescape(segs[0])
	if err != nil {
		return nil, err
	}
	if u.query.Has("master_name") {
		return nil, errors.New("give the master name in the path, not as master_name=")
	}
	u.query.Set("master_name", master)
	path := ""
	if len(segs) == 2 {
		path = "/" + segs[1]
	}
	opt, err := redis.ParseFailoverURL(u.single(scheme, path))
	if err != nil {
		return nil, err
	}
	// go-redis reads the userinfo as the Sentinels' credentials only; in
	// practice the master usually has the same ones.
	if opt.Username == "" && opt.Password == "" {
		opt.Username, opt.Password = opt.SentinelUsername, opt.SentinelPassword
	}
	return opt, nil
}

func parseClusterURL(scheme, rest string) (*redis.ClusterOptions, error) {
	u, err := splitMultiHost(rest, "6379")
	if err != nil {
		return nil, err
	}
	if strings.Trim(u.path, "/") != "" {
		return nil, errors.New("cluster URLs take no path (Redis Cluster has only database 0)")
	}
	return redis.ParseClusterURL(u.single(scheme, ""))
}

// urlError names the setting, with the password hidden. url.Error repeats
// the whole URL, password included, so only its inner error is kept.
func urlError(rawURL string, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return urlErrorf("Redis URL %s: %v", redactURL(rawURL), err)
}

// redactURL replaces the userinfo of a URL, if any, with "xxxxx".
func redactURL(rawURL string) string {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		if strings.Contains(rawURL, "@") {
			return "xxxxx"
		}
		return rawURL
	}
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	if i := strings.LastIndexByte(rest[:end], '@'); i >= 0 {
		rest = "xxxxx" + rest[i:]
	}
	return scheme + "://" + rest
}
