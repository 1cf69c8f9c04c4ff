package main

import (
	"net"
	"testing"
)

// TestAdminDefaultPort: the admin listener's default port is loopback and
// none a monitoring host or the example game already listens on, so the
// defaults start side by side on one host.
func TestAdminDefaultPort(t *testing.T) {
	host, port, err := net.SplitHostPort(defaultAdminAddr)
	if err != nil {
		t.Fatal(err)
	}
	if host != "127.0.0.1" {
		t.Errorf("default admin host %q, want loopback", host)
	}
	taken := map[string]string{
		"9090": "Prometheus", "9091": "Pushgateway", "9093": "Alertmanager", "9100": "node exporter",
		"8080": "the public listener", "8081": "the example game's page",
	}
	if who, ok := taken[port]; ok {
		t.Errorf("default admin port %s is %s's", port, who)
	}
}
