package main

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/stompgate/stompgate/nginx"
	"github.com/stompgate/stompgate/policy"
)

// runNginxConfig prints the nginx config rendered from the policy: the
// same zones the server enforces, so the two never drift apart. By default
// it is a file for /etc/nginx/conf.d/; -nginx-full prints a standalone
// nginx.conf. Its settings follow the server's rule: a flag, or the
// environment variable of the same name, so WSSERVER_WS_PATH and
// WSSERVER_POLICY set for the server render the matching front.
func runNginxConfig(args []string, getenv func(string) string, stdout io.Writer) error {
	var n nginxSettings
	if err := parseFlags(n.flagSet(stdout), args, getenv); err != nil {
		return err
	}
	if n.ipv6Prefix < 16 || n.ipv6Prefix > 128 || n.ipv6Prefix%16 != 0 {
		return badSetting("ipv6-prefix", n.ipv6Prefix, "nginx has no function to mask an address, so its key is cut from the address's text in whole 16-bit groups: use a multiple of 16 from 16 to 128 (48, 64, 128) here and in the server")
	}
	pol, err := policy.Load(n.policyFile)
	if err != nil {
		return fmt.Errorf("-policy: %w", err)
	}
	conf, err := nginx.Render(pol, nginx.Config{
		Full:         n.full,
		TLSCert:      n.tlsCert,
		TLSKey:       n.tlsKey,
		TLSListen:    n.tlsListen,
		Listen:       n.listen,
		ServerName:   n.serverName,
		WSUpstreams:  splitList(n.ws),
		APIUpstreams: splitList(n.api),
		WSPath:       n.wsPath,
		ReadTimeout:  n.readTimeout,
		HeartBeat:    max(n.heartBeat, time.Duration(0)),
		IPv6Prefix:   n.ipv6Prefix,

		WorkerConnections: n.workerConnections,
		User:              n.user,
		PIDFile:           n.pidFile,
		ErrorLog:          n.errorLog,
		AccessLog:         n.accessLog,
		TempPath:          n.tempPath,
	})
	if err != nil {
		return err
	}
	_, err = stdout.Write(conf)
	return err
}

// nginxSettings are the settings of nginx-config, each a flag and an
// environment variable as the server's are (envName).
type nginxSettings struct {
	policyFile, listen, serverName, ws, api string
	full                                    bool
	tlsCert, tlsKey, tlsListen, wsPath      string
	readTimeout, heartBeat                  time.Duration
	ipv6Prefix                              int
	workerConnections                       int
	user, pidFile, errorLog, accessLog      string
	tempPath                                string
}

// flagSet returns the flags of nginx-config bound to n, printing usage to
// out.
func (n *nginxSettings) flagSet(out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("wsserver nginx-config", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&n.policyFile, "policy", "", "rate-limit policy file (YAML; empty: the compiled-in defaults)")
	fs.StringVar(&n.listen, "nginx-listen", nginx.DefaultListen, "nginx listen address (port or host:port)")
	fs.StringVar(&n.serverName, "nginx-server-name", nginx.DefaultServerName, "nginx server_name")
	fs.StringVar(&n.ws, "nginx-ws-upstreams", nginx.DefaultWSUpstream, "comma-separated wsserver instances (host:port)")
	fs.StringVar(&n.api, "nginx-api-upstreams", "", "comma-separated application HTTP API servers (host:port) for the policy's api routes (empty: no API; those routes are left out)")
	fs.BoolVar(&n.full, "nginx-full", false, "print a standalone nginx.conf (replaces the distribution's) instead of a file for /etc/nginx/conf.d/")
	fs.StringVar(&n.tlsCert, "nginx-tls-cert", "", "PEM certificate chain for an HTTPS server (with -nginx-tls-key); plain HTTP then redirects to it")
	fs.StringVar(&n.tlsKey, "nginx-tls-key", "", "PEM private key of -nginx-tls-cert")
	fs.StringVar(&n.tlsListen, "nginx-tls-listen", nginx.DefaultTLSListen, "nginx HTTPS listen address (port or host:port), with -nginx-tls-cert")
	fs.StringVar(&n.wsPath, "ws-path", nginx.DefaultWSPath, "URL path of the STOMP WebSocket endpoint")
	fs.DurationVar(&n.readTimeout, "nginx-read-timeout", nginx.DefaultReadTimeout, "proxy_read_timeout of WebSocket tunnels; above the heart-beat interval")
	fs.IntVar(&n.ipv6Prefix, "ipv6-prefix", nginx.DefaultIPv6Prefix, "prefix length by which the limits key IPv6 clients, as the server's -ipv6-prefix; nginx can mirror multiples of 16 only (16-128)")
	fs.DurationVar(&n.heartBeat, "heart-beat-send", nginx.DefaultHeartBeat, "the server's heart-beat interval, checked against -nginx-read-timeout")
	fs.IntVar(&n.workerConnections, "nginx-worker-connections", nginx.DefaultWorkerConnections, "with -nginx-full: worker_connections (a proxied WebSocket holds two)")
	fs.StringVar(&n.user, "nginx-user", nginx.DefaultUser, "with -nginx-full: the account nginx's workers run as")
	fs.StringVar(&n.pidFile, "nginx-pid", nginx.DefaultPIDFile, "with -nginx-full: nginx's pid file")
	fs.StringVar(&n.errorLog, "nginx-error-log", nginx.DefaultErrorLog, "with -nginx-full: nginx's error log file, or stderr")
	fs.StringVar(&n.accessLog, "nginx-access-log", nginx.DefaultAccessLog, "the access log of stompgate's servers, or off")
	fs.StringVar(&n.tempPath, "nginx-temp-path", "", "with -nginx-full: a directory for nginx's temporary files (empty: nginx's compiled-in paths)")
	fs.Usage = func() { printSections(out, nginxUsageHead, nginxFlagSections, fs) }
	return fs
}

// nginxUsageHead starts nginx-config's -h.
const nginxUsageHead = `Usage: wsserver nginx-config [flags]

Prints the nginx configuration rendered from the policy: a file for
/etc/nginx/conf.d/, or with -nginx-full a standalone nginx.conf.
Every flag can also be set by the environment variable shown; the
server's environment file renders the matching front.
`

// nginxFlagSections orders nginx-config's -h as flagSections does the
// server's. Every flag is in exactly one section (TestHelpSections).
var nginxFlagSections = []flagSection{
	{"Front: where nginx listens", []string{
		"nginx-listen", "nginx-server-name", "nginx-tls-cert", "nginx-tls-key", "nginx-tls-listen",
	}},
	{"Upstreams: where nginx sends requests", []string{
		"nginx-ws-upstreams", "nginx-api-upstreams", "nginx-read-timeout",
	}},
	{"Shared with the server: give both the same values", []string{
		"policy", "ws-path", "ipv6-prefix", "heart-beat-send",
	}},
	{"Files and process: the standalone nginx.conf (-nginx-full)", []string{
		"nginx-full", "nginx-worker-connections", "nginx-user", "nginx-pid", "nginx-error-log", "nginx-access-log", "nginx-temp-path",
	}},
}
