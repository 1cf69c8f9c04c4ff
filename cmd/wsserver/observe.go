package main

import (
	"time"

	"github.com/stompgate/stompgate/handshake"
	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/metrics"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/relay"
	"github.com/stompgate/stompgate/server"
)

// observer adapts metrics.Metrics to the observer interfaces of the
// server, the interceptor chain, the handshake limiter and the relay.
type observer struct{ m *metrics.Metrics }

var (
	_ server.Observer      = observer{}
	_ interceptor.Observer = observer{}
	_ handshake.Observer   = observer{}
	_ relay.Observer       = observer{}
	_ server.InputObserver = observer{}
)

func (o observer) SessionOpened()                 { o.m.SessionOpened() }
func (o observer) Delivered(dest string, n int)   { o.m.Delivered(dest, n) }
func (o observer) SlowConsumerDisconnect()        { o.m.SlowConsumerDisconnect() }
func (o observer) ProtocolErrorClose(kind string) { o.m.ProtocolErrorClose(kind) }
func (o observer) Panic()                         { o.m.Panic() }
func (o observer) ReaderPaused()                  { o.m.ReaderPaused() }
func (o observer) HeartBeatCapped()               { o.m.HeartBeatCapped() }
func (o observer) SessionCompressed()             { o.m.SessionCompressed() }
func (o observer) FrameReceived(cmd string)       { o.m.FrameReceived(cmd) }
func (o observer) FramePassed(cmd string)         { o.m.FramePassed(cmd) }

// InputPaused counts a reader paused by its session's inbound budget.
func (o observer) InputPaused(budget string, d time.Duration) { o.m.InputPaused(budget, d) }

func (o observer) SessionClosed(reason *outcome.Close) { o.m.SessionClosed(reason) }

func (o observer) FrameDropped(cmd string, reason *outcome.Reason) {
	o.m.FrameDropped(cmd, metrics.DropReasonOf(reason))
}

// Handshake counts how an upgrade that reached the STOMP server ended.
func (o observer) Handshake(result *outcome.Handshake) { o.m.Handshake(result) }

// Decision counts the limiter's refusals; an allowed request is counted
// by Handshake once the upgrade has gone through.
func (o observer) Decision(r handshake.Result, elapsed time.Duration) {
	o.m.LimiterDecision(r.Store, elapsed)
	if r.Local != "" {
		o.m.LimiterLocalDecision(r.Local)
	}
	if h := r.Handshake(); h != nil {
		o.m.Handshake(h)
	}
}

func (o observer) StoreError(store string, err error) { o.m.LimiterStoreError(store) }
func (o observer) Fallback(active bool)               { o.m.SetLimiterFallback(active) }
func (o observer) Confirmation(answered bool)         { o.m.LimiterConfirmation(answered) }

func (o observer) RelayMessages(direction string, n int) {
	o.m.RelayMessages(metrics.RelayDirectionOf(direction), n)
}

func (o observer) RelayDropped(reason string, n int) {
	o.m.RelayDropped(metrics.RelayDropReasonOf(reason), n)
}

func (o observer) RelayOutage(active bool)  { o.m.SetRelayOutage(active) }
func (o observer) RelaySubscriptions(n int) { o.m.SetRelaySubscriptions(n) }
