package main

import (
	"flag"
	"math"
	"time"

	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/server"
)

// inboundSettings bound the CPU one session's input costs: the inbound
// budget (server.Config.InboundFrames) and the token checks after
// CONNECT (interceptor.PrincipalConfig.TokenChecks).
type inboundSettings struct {
	inboundFrames int
	inboundBytes  int
	inboundWindow time.Duration

	rememberedTokens int
	tokenChecks      int
	tokenCheckWindow time.Duration
}

// inboundFlags registers the inbound budget's settings. Their zero
// defaults follow the send limit, so that raising -send-limit (to
// measure throughput, say) raises the budget with it.
func (s *settings) inboundFlags(fs *flag.FlagSet) {
	fs.IntVar(&s.inboundFrames, "inbound-frames", 0, "frames a session may send per -inbound-window, counting every WebSocket frame (fragments and pings too), STOMP frame and heart-beat EOL; a session over it is not closed but not read until the window ends (0: the larger of 2000 and 4 SENDs' worth of -send-limit)")
	fs.IntVar(&s.inboundBytes, "inbound-bytes", 0, "WebSocket payload bytes a session may send per -inbound-window, paused like -inbound-frames (0: the larger of 4 MiB and -send-limit frames of -max-frame-size)")
	fs.DurationVar(&s.inboundWindow, "inbound-window", server.DefaultInboundWindow, "window of -inbound-frames and -inbound-bytes; also the longest pause")
	fs.IntVar(&s.rememberedTokens, "remembered-tokens", interceptor.DefaultRememberedTokens, "verified tokens each session remembers, so that a token header repeating one costs no signature check")
	fs.IntVar(&s.tokenChecks, "token-checks", interceptor.DefaultTokenChecks, "signature checks of new tokens (token headers after CONNECT) per session per -token-check-window; one more closes the session with ERROR \"too many token checks\"")
	fs.DurationVar(&s.tokenCheckWindow, "token-check-window", interceptor.DefaultTokenCheckWindow, "window of -token-checks")
}

// validateInbound checks the settings inboundFlags registers.
func (s *settings) validateInbound() error {
	if s.inboundFrames < 0 {
		return badSetting("inbound-frames", s.inboundFrames, "must not be negative")
	}
	if s.inboundBytes < 0 {
		return badSetting("inbound-bytes", s.inboundBytes, "must not be negative")
	}
	if s.inboundWindow <= 0 {
		return badSetting("inbound-window", s.inboundWindow, "must be positive")
	}
	if s.rememberedTokens < 1 {
		return badSetting("remembered-tokens", s.rememberedTokens, "must be positive")
	}
	if s.tokenChecks < 1 {
		return badSetting("token-checks", s.tokenChecks, "must be positive")
	}
	if s.tokenCheckWindow <= 0 {
		return badSetting("token-check-window", s.tokenCheckWindow, "must be positive")
	}
	return nil
}

// inboundBudget returns the frames and bytes per window the server is
// given: the settings, or for a zero one its value derived from the send
// limit. A SEND costs two frames (its WebSocket frame and its STOMP
// frame), so 4 SENDs' worth leaves room for as many other frames again.
func (s *settings) inboundBudget() (frames, bytes int) {
	perWindow := float64(s.sendLimit) * float64(s.inboundWindow) / float64(s.sendWindow)
	frames, bytes = s.inboundFrames, s.inboundBytes
	if frames == 0 {
		frames = max(server.DefaultInboundFrames, clampInt(4*perWindow))
	}
	if bytes == 0 {
		bytes = max(server.DefaultInboundBytes, clampInt(perWindow*float64(s.maxFrameSize)))
	}
	return frames, bytes
}

// clampInt rounds v up to an int no larger than 1<<40, a budget nothing
// reaches in a window.
func clampInt(v float64) int {
	return int(math.Min(math.Ceil(v), 1<<40))
}
