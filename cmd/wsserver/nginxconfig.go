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
	fs := flag.NewFlagSet("wsserver nginx-config", flag.ContinueOnError)
	fs.SetOutput(stdout)
	policyFile := fs.String("policy", "", "rate-limit policy file (YAML; empty: the compiled-in defaults)")
	listen := fs.String("nginx-listen", nginx.DefaultListen, "nginx listen address (port or host:port)")
	serverName := fs.String("nginx-server-name", nginx.DefaultServerName, "nginx server_name")
	ws := fs.String("nginx-ws-upstreams", nginx.DefaultWSUpstream, "comma-separated wsserver instances (host:port)")
	api := fs.String("nginx-api-upstreams", "", "comma-separated application HTTP API servers (host:port) for the policy's api routes (empty: no API; those routes are left out)")
	full := fs.Bool("nginx-full", false, "print a standalone nginx.conf (replaces the distribution's) instead of a file for /etc/nginx/conf.d/")
	tlsCert := fs.String("nginx-tls-cert", "", "PEM certificate chain for an HTTPS server (with -nginx-tls-key); plain HTTP then redirects to it")
	tlsKey := fs.String("nginx-tls-key", "", "PEM private key of -nginx-tls-cert")
	tlsListen := fs.String("nginx-tls-listen", nginx.DefaultTLSListen, "nginx HTTPS listen address (port or host:port), with -nginx-tls-cert")
	wsPath := fs.String("ws-path", nginx.DefaultWSPath, "URL path of the STOMP WebSocket endpoint")
	readTimeout := fs.Duration("nginx-read-timeout", nginx.DefaultReadTimeout, "proxy_read_timeout of WebSocket tunnels; above the heart-beat interval")
	ipv6Prefix := fs.Int("ipv6-prefix", nginx.DefaultIPv6Prefix, "prefix length by which the limits key IPv6 clients, as the server's -ipv6-prefix; nginx can mirror multiples of 16 only (16-128)")
	heartBeat := fs.Duration("heart-beat-send", nginx.DefaultHeartBeat, "the server's heart-beat interval, checked against -nginx-read-timeout")
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	if *ipv6Prefix < 16 || *ipv6Prefix > 128 || *ipv6Prefix%16 != 0 {
		return badSetting("ipv6-prefix", *ipv6Prefix, "nginx has no function to mask an address, so its key is cut from the address's text in whole 16-bit groups: use a multiple of 16 from 16 to 128 (48, 64, 128) here and in the server")
	}
	pol, err := policy.Load(*policyFile)
	if err != nil {
		return fmt.Errorf("-policy: %w", err)
	}
	conf, err := nginx.Render(pol, nginx.Config{
		Full:         *full,
		TLSCert:      *tlsCert,
		TLSKey:       *tlsKey,
		TLSListen:    *tlsListen,
		Listen:       *listen,
		ServerName:   *serverName,
		WSUpstreams:  splitList(*ws),
		APIUpstreams: splitList(*api),
		WSPath:       *wsPath,
		ReadTimeout:  *readTimeout,
		HeartBeat:    max(*heartBeat, time.Duration(0)),
		IPv6Prefix:   *ipv6Prefix,
	})
	if err != nil {
		return err
	}
	_, err = stdout.Write(conf)
	return err
}
