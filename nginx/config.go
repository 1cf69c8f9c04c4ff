package nginx

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Defaults of Config, for a system install of nginx on Debian or Ubuntu.
const (
	DefaultListen            = "80"
	DefaultTLSListen         = "443"
	DefaultServerName        = "_"
	DefaultWSUpstream        = "127.0.0.1:8080"
	DefaultWSPath            = "/ws"
	DefaultReadTimeout       = 75 * time.Second
	DefaultHeartBeat         = 10 * time.Second
	DefaultWorkerConnections = 4096
	DefaultUser              = "www-data"
	DefaultPIDFile           = "/run/nginx.pid"
	DefaultErrorLog          = "/var/log/nginx/error.log"
	DefaultAccessLog         = "/var/log/nginx/access.log"
)

// Config says where the rendered nginx configuration listens, where it
// sends requests and where it keeps its files. The zero Config renders the
// file to drop into /etc/nginx/conf.d/ on a system install: plain HTTP on
// port 80 in front of one wsserver on 127.0.0.1:8080, with no API.
//
// By default Render produces http-context directives only (zones, maps,
// upstreams and the server blocks), for nginx's own nginx.conf to include;
// Full wraps them in a complete nginx.conf for `nginx -c`. Fields marked
// "Full only" are main- and events-context settings, ignored otherwise:
// an included file must leave those to the nginx.conf that includes it.
type Config struct {
	// Full renders a standalone nginx.conf (main context, events{} and
	// http{}) instead of a file for /etc/nginx/conf.d/. It replaces the
	// distribution's nginx.conf and everything that file includes.
	Full bool
	// Listen is the address of the plain HTTP listen directive: a port
	// ("80") or host:port ("127.0.0.1:8081", "[::1]:80"). Default "80",
	// every IPv4 address. With TLS, this server only redirects to HTTPS.
	Listen string
	// TLSCert and TLSKey are the PEM certificate chain and private key
	// files of an HTTPS server on TLSListen (ssl_certificate and
	// ssl_certificate_key). Set both or neither; empty means no TLS. nginx
	// reads them as root when it starts or reloads, so they may be
	// readable by root only.
	TLSCert string
	TLSKey  string
	// TLSListen is the HTTPS listen address, a port or host:port like
	// Listen, used only with TLSCert. Default "443".
	TLSListen string
	// ServerName is the server_name: one or more names separated by
	// spaces. Default "_", which matches no real host name, so the server
	// answers whatever Host the client sends.
	ServerName string
	// WSUpstreams are the wsserver instances, each host:port, in the
	// stompgate_ws upstream. Empty means [DefaultWSUpstream].
	WSUpstreams []string
	// APIUpstreams are the application's HTTP API servers, each host:port,
	// in the stompgate_api upstream. Empty (the default) means there is no
	// API: the policy's api routes, and zones left without routes, are not
	// rendered (a comment lists them), and neither is the upstream. Most
	// deployments run the wsserver alone, and an upstream that does not
	// exist would turn those paths into 502s.
	APIUpstreams []string
	// WSPath is the WebSocket endpoint the wsserver serves (its -ws-path).
	// It always gets a location with the WebSocket proxy settings, and
	// every policy route to the ws upstream is rendered on it whatever path
	// the policy names: the wsserver has one endpoint and limits its
	// handshakes with the policy's ws zone there. A policy api route on it
	// is an error. Default "/ws".
	WSPath string
	// ReadTimeout is proxy_read_timeout and proxy_send_timeout on WebSocket
	// locations: how long a tunnel may stay silent before nginx closes it.
	// STOMP heart-beats keep a healthy session talking every HeartBeat, so
	// ReadTimeout must exceed HeartBeat; the default 75s leaves room for
	// several lost heart-beats and is above nginx's own 60s default. Zero
	// means the default; negative is an error. It is rendered in whole
	// milliseconds.
	ReadTimeout time.Duration
	// HeartBeat is the wsserver's STOMP heart-beat interval, used only to
	// check ReadTimeout. Zero means DefaultHeartBeat, the server's default;
	// negative is an error.
	HeartBeat time.Duration
	// WorkerConnections is worker_connections (Full only): the open connections one
	// worker may hold. A proxied WebSocket holds two (client and upstream),
	// so the default 4096 carries about 2000 sockets per worker.
	// worker_rlimit_nofile is rendered as twice this value. Zero means the
	// default; negative is an error.
	WorkerConnections int
	// User (Full only) is the user directive, the account nginx's workers run as when
	// the master starts as root. Default "www-data".
	User string
	// PIDFile (Full only) is the pid directive. Default "/run/nginx.pid". A relative
	// path is relative to nginx's prefix (-p).
	PIDFile string
	// ErrorLog (Full only) is the error_log file, or "stderr". Default
	// "/var/log/nginx/error.log". It logs at warn, the level limit_req
	// rejections are logged at. An included file keeps the error log of
	// the nginx.conf that includes it (error level on Debian: rejections
	// then show in the access log only).
	ErrorLog string
	// AccessLog is the access_log file of stompgate's servers, or "off".
	// Default "/var/log/nginx/access.log". Its format leaves the query
	// string out (see Render).
	AccessLog string
	// IPv6Prefix is the prefix length, in bits, by which the limits key
	// IPv6 clients: every address of one prefix shares one limit_req
	// bucket and one limit_conn count, as in the wsserver (its
	// -ipv6-prefix; set both alike). IPv4 clients are keyed by address,
	// IPv4-mapped ones as the IPv4 address. It must be a multiple of 16
	// from 16 to 128 (see Render); zero means DefaultIPv6Prefix, /64.
	IPv6Prefix int
	// TempPath (Full only), when set, is a directory under which the *_temp_path
	// directories are rendered (client_body_temp, proxy_temp, and the
	// unused fastcgi, uwsgi and scgi ones, which nginx creates anyway).
	// Empty leaves nginx's compiled-in paths (/var/lib/nginx/... on Debian).
	// Tests set it to keep nginx inside a temporary directory.
	TempPath string
}

// withDefaults returns a copy of c with zero fields set to their defaults,
// or an error naming the first invalid setting.
func (c Config) withDefaults() (Config, error) {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.ServerName == "" {
		c.ServerName = DefaultServerName
	}
	if len(c.WSUpstreams) == 0 {
		c.WSUpstreams = []string{DefaultWSUpstream}
	}
	if c.TLSListen == "" {
		c.TLSListen = DefaultTLSListen
	}
	if c.WSPath == "" {
		c.WSPath = DefaultWSPath
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.HeartBeat == 0 {
		c.HeartBeat = DefaultHeartBeat
	}
	if c.WorkerConnections == 0 {
		c.WorkerConnections = DefaultWorkerConnections
	}
	if c.User == "" {
		c.User = DefaultUser
	}
	if c.PIDFile == "" {
		c.PIDFile = DefaultPIDFile
	}
	if c.ErrorLog == "" {
		c.ErrorLog = DefaultErrorLog
	}
	if c.AccessLog == "" {
		c.AccessLog = DefaultAccessLog
	}
	if c.IPv6Prefix == 0 {
		c.IPv6Prefix = DefaultIPv6Prefix
	}
	c.WSUpstreams = append([]string(nil), c.WSUpstreams...)
	c.APIUpstreams = append([]string(nil), c.APIUpstreams...)
	return c, c.validate()
}

var (
	// wordRE is what a value rendered bare into the configuration may hold:
	// nothing that nginx's parser treats as syntax (space, ; { } quotes $ #
	// and backslash).
	wordRE       = regexp.MustCompile(`^[A-Za-z0-9_.:/@%+,=~*\[\]-]+$`)
	serverNameRE = regexp.MustCompile(`^[A-Za-z0-9_.*~^:\[\]-]+( [A-Za-z0-9_.*~^:\[\]-]+)*$`)
	wsPathRE     = regexp.MustCompile(`^/[A-Za-z0-9._~/-]*$`)
	hostRE       = regexp.MustCompile(`^[A-Za-z0-9.:-]+$`)
)

// validate checks a Config whose defaults are filled.
func (c Config) validate() error {
	if err := checkListen(c.Listen); err != nil {
		return err
	}
	if err := c.validateTLS(); err != nil {
		return err
	}
	if !serverNameRE.MatchString(c.ServerName) {
		return configErrorf("ServerName %q is not a list of host names", c.ServerName)
	}
	for _, u := range c.WSUpstreams {
		if err := checkHostPort(u); err != nil {
			return configErrorf("WSUpstreams %q: %v", u, err)
		}
	}
	for _, u := range c.APIUpstreams {
		if err := checkHostPort(u); err != nil {
			return configErrorf("APIUpstreams %q: %v", u, err)
		}
	}
	if !wsPathRE.MatchString(c.WSPath) || strings.Contains(c.WSPath, "//") {
		return configErrorf("WSPath %q is not a path of letters, digits and -._~/", c.WSPath)
	}
	switch {
	case c.HeartBeat < 0:
		return configErrorf("HeartBeat %v is negative", c.HeartBeat)
	case c.ReadTimeout < 0:
		return configErrorf("ReadTimeout %v is negative", c.ReadTimeout)
	case c.ReadTimeout <= c.HeartBeat:
		return configErrorf("ReadTimeout %v must exceed HeartBeat %v, or idle sessions are cut between heart-beats", c.ReadTimeout, c.HeartBeat)
	case c.ReadTimeout%time.Millisecond != 0:
		return configErrorf("ReadTimeout %v is not a whole number of milliseconds", c.ReadTimeout)
	}
	if c.WorkerConnections < 0 {
		return configErrorf("WorkerConnections %d is negative", c.WorkerConnections)
	}
	if err := checkIPv6Prefix(c.IPv6Prefix); err != nil {
		return err
	}
	for _, f := range []struct{ name, value string }{
		{"User", c.User},
		{"PIDFile", c.PIDFile},
		{"ErrorLog", c.ErrorLog},
		{"AccessLog", c.AccessLog},
	} {
		if !wordRE.MatchString(f.value) {
			return configErrorf("%s %q contains characters nginx would parse as syntax", f.name, f.value)
		}
	}
	if c.TempPath != "" && !wordRE.MatchString(c.TempPath) {
		return configErrorf("TempPath %q contains characters nginx would parse as syntax", c.TempPath)
	}
	return nil
}

// validateTLS checks the TLS settings: both files or neither, paths nginx
// can parse, and an HTTPS address apart from the HTTP one.
func (c Config) validateTLS() error {
	switch {
	case c.TLSCert == "" && c.TLSKey == "":
		return nil
	case c.TLSCert == "":
		return configErrorf("TLSCert is empty but TLSKey %q is set; set both or neither", c.TLSKey)
	case c.TLSKey == "":
		return configErrorf("TLSKey is empty but TLSCert %q is set; set both or neither", c.TLSCert)
	}
	for _, f := range []struct{ name, value string }{{"TLSCert", c.TLSCert}, {"TLSKey", c.TLSKey}} {
		if !wordRE.MatchString(f.value) {
			return configErrorf("%s %q contains characters nginx would parse as syntax", f.name, f.value)
		}
	}
	if err := checkAddr("TLSListen", c.TLSListen); err != nil {
		return err
	}
	if listenPort(c.TLSListen) == listenPort(c.Listen) {
		return configErrorf("TLSListen %q and Listen %q use the same port", c.TLSListen, c.Listen)
	}
	return nil
}

// checkListen accepts a port or host:port.
func checkListen(s string) error {
	return checkAddr("Listen", s)
}

// checkAddr accepts a port or host:port for the setting called name.
func checkAddr(name, s string) error {
	if checkPort(s) == nil {
		return nil
	}
	if err := checkHostPort(s); err != nil {
		return configErrorf("%s %q: %v", name, s, err)
	}
	return nil
}

// listenPort returns the port of a checked listen address.
func listenPort(addr string) string {
	if _, port, err := net.SplitHostPort(addr); err == nil {
		return port
	}
	return addr
}

// checkHostPort accepts host:port with a plain host name or IP address. Its
// errors carry no prefix; the caller names the setting.
func checkHostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return errors.New("want host:port")
	}
	if host == "" || !hostRE.MatchString(host) {
		return fmt.Errorf("host %q is not a host name or IP address", host)
	}
	return checkPort(port)
}

// checkPort accepts a decimal port between 1 and 65535.
func checkPort(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != s {
		return fmt.Errorf("port %q is not between 1 and 65535", s)
	}
	return nil
}

// duration renders d in nginx time syntax, whole seconds when possible.
func duration(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
}
