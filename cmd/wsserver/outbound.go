package main

import (
	"flag"
	"fmt"

	"github.com/stompgate/stompgate/metrics"
	"github.com/stompgate/stompgate/server"
)

// outboundSettings bound what the server holds for writing across all
// sessions (server.Config.OutboundTotalBytes, SocketSendBuffer).
type outboundSettings struct {
	outboundTotalBytes int
	socketSendBuffer   int
}

// outboundFlags registers the server-wide outbound settings.
func (s *settings) outboundFlags(fs *flag.FlagSet) {
	fs.IntVar(&s.outboundTotalBytes, "outbound-total-bytes", server.DefaultOutboundTotalBytes, "bytes queued for writing across all sessions together; a delivery that takes the total over it closes the sessions with the largest backlogs as slow consumers (0: no server-wide bound)")
	fs.IntVar(&s.socketSendBuffer, "socket-send-buffer", server.DefaultSocketSendBuffer, "kernel send buffer (SO_SNDBUF) of each accepted connection, so a client that does not read holds at most this much kernel memory beyond its outbound queue, twice it on Linux (0: the kernel's own sizing, which grows to megabytes)")
}

// validateOutbound checks the settings outboundFlags registers.
func (s *settings) validateOutbound() error {
	switch {
	case s.outboundTotalBytes < 0:
		return badSetting("outbound-total-bytes", s.outboundTotalBytes, "must not be negative (0: no server-wide bound)")
	case s.outboundTotalBytes > 0 && s.outboundTotalBytes < s.outboundBytes:
		return badSetting("outbound-total-bytes", s.outboundTotalBytes, fmt.Sprintf("is below -outbound-bytes %d: one session could hold more than all of them together", s.outboundBytes))
	case s.socketSendBuffer < 0:
		return badSetting("socket-send-buffer", s.socketSendBuffer, "must not be negative (0: the kernel's own sizing)")
	case s.socketSendBuffer > 0 && s.socketSendBuffer < 4096:
		return badSetting("socket-send-buffer", s.socketSendBuffer, "must be at least 4096 (0: the kernel's own sizing)")
	}
	return nil
}

// serverOutbound maps the flags' 0 (off) to the server's negative (off):
// the server's zero means its default.
func serverOutbound(v int) int {
	if v == 0 {
		return -1
	}
	return v
}

// observeOutbound exposes the server-wide outbound figures on the app's
// registry, read at each scrape.
func (a *app) observeOutbound() {
	a.registry.MustRegister(metrics.NewOutboundCollector(func() metrics.OutboundStats { return metrics.OutboundStats(a.stomp.OutboundStats()) }))
}
