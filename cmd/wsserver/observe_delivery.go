package main

import (
	"time"

	"github.com/stompgate/stompgate/server"
)

var _ server.DeliveryObserver = observer{}

// MessageWritten times a MESSAGE written to a subscriber's socket.
func (o observer) MessageWritten(path string, latency, queued time.Duration) {
	o.m.MessageWritten(path, latency, queued)
}
