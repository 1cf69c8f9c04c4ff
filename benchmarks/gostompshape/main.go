// Command gostompshape measures the server's CPU per delivered message
// for the browser's shape (one SEND frame per WebSocket message) as a
// STOMP client library produces it: go-stomp over coder/websocket, every
// publisher with its own window of messages in flight, one subscriber.
// loadtest's own client packs and paces its frames itself; this one shows
// what a slower, library-driven client makes the server do, where each
// read and write carries fewer messages.
//
//	go run ./benchmarks/gostompshape -url ws://127.0.0.1:8080/ws -pid $(pidof wsserver)
//
// Each session dials from its own loopback address (127.3.0.N), so the
// server's per-address handshake limit does not refuse the publishers.
// Start wsserver with -send-limit 1000000 -inbound-frames 100000000
// -inbound-bytes 1073741824, or its per-session limits are what is
// measured: at full speed a publisher spends the default inbound budget
// (2,000 frames a second, a SEND counting as its WebSocket frame and its
// STOMP frame) in a few milliseconds and then waits out the second.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/go-stomp/stomp/v3"

	"github.com/stompgate/stompgate/internal/procstat"
)

type config struct {
	url        string
	pid        int
	publishers int
	window     int
	size       int
	warmup     time.Duration
	duration   time.Duration
}

type result struct {
	Delivered int64   // messages delivered during the measured period
	PerSec    float64 // Delivered per second
	CPUMicros float64 // server CPU per delivered message; 0 without a pid
}

func main() {
	var c config
	fs := flag.NewFlagSet("gostompshape", flag.ContinueOnError)
	fs.StringVar(&c.url, "url", "ws://127.0.0.1:8080/ws", "the server's WebSocket URL")
	fs.IntVar(&c.pid, "pid", 0, "the server's process id, for its CPU time from /proc (0: not measured)")
	fs.IntVar(&c.publishers, "publishers", 10, "publishing sessions")
	fs.IntVar(&c.window, "window", 10, "messages each publisher has in flight at most")
	fs.IntVar(&c.size, "size", 100, "body bytes")
	fs.DurationVar(&c.warmup, "warmup", 2*time.Second, "load before the measured period")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "measured period")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	r, err := run(context.Background(), c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gostompshape:", err)
		os.Exit(1)
	}
	fmt.Printf("delivered %.0f msg/s", r.PerSec)
	if c.pid > 0 {
		fmt.Printf(", server CPU %.2f µs per delivered message", r.CPUMicros)
	}
	fmt.Println()
}

func run(ctx context.Context, c config) (result, error) {
	switch {
	case c.publishers < 1 || c.publishers > 250:
		return result{}, fmt.Errorf("-publishers %d: between 1 and 250", c.publishers)
	case c.window < 1:
		return result{}, fmt.Errorf("-window %d: at least 1", c.window)
	case c.size < 2:
		return result{}, fmt.Errorf("-size %d: at least 2", c.size)
	case c.duration <= 0:
		return result{}, fmt.Errorf("-duration %v: must be positive", c.duration)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var ip atomic.Int32
	dial := func() (*stomp.Conn, error) {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 3, 0, byte(ip.Add(1)))}}
		hc := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
		ws, _, err := websocket.Dial(ctx, c.url, &websocket.DialOptions{Subprotocols: []string{"v12.stomp"}, HTTPClient: hc})
		if err != nil {
			return nil, err
		}
		ws.SetReadLimit(1 << 20)
		// Cancelling ctx closes the connection (websocket.NetConn).
		return stomp.Connect(websocket.NetConn(ctx, ws, websocket.MessageText), stomp.ConnOpt.HeartBeat(0, 0))
	}

	sub, err := dial()
	if err != nil {
		return result{}, fmt.Errorf("subscriber: %w", err)
	}
	dest := fmt.Sprintf("/topic/gostompshape.%d", time.Now().UnixNano())
	s, err := sub.Subscribe(dest, stomp.AckAuto)
	if err != nil {
		return result{}, fmt.Errorf("subscribe: %w", err)
	}
	// A message of its own coming back shows the subscription is in
	// place before any publisher sends: a lost message would take a slot
	// of a window for good.
	if err := sub.Send(dest, "text/plain", []byte("sync")); err != nil {
		return result{}, fmt.Errorf("subscriber: %w", err)
	}
	select {
	case m := <-s.C:
		if m == nil || m.Err != nil || string(m.Body) != "sync" {
			return result{}, fmt.Errorf("subscriber: the subscription did not deliver its own message: %v", m)
		}
	case <-time.After(10 * time.Second):
		return result{}, errors.New("subscriber: its own message did not come back within 10 s")
	}
	// Each body starts with its publisher's index, so the subscriber
	// gives the slot back to the right window.
	slots := make([]chan struct{}, c.publishers)
	for i := range slots {
		slots[i] = make(chan struct{}, c.window)
	}
	var delivered atomic.Int64
	readErr := make(chan error, 1)
	go func() {
		for m := range s.C {
			if m.Err != nil {
				readErr <- m.Err
				return
			}
			i, err := strconv.Atoi(string(m.Body[:strings.IndexByte(string(m.Body), ' ')]))
			if err != nil || i < 0 || i >= len(slots) {
				readErr <- fmt.Errorf("a message from no publisher: %.20q", m.Body)
				return
			}
			<-slots[i]
			delivered.Add(1)
		}
		readErr <- io.EOF
	}()

	var wg sync.WaitGroup
	sendErr := make(chan error, c.publishers)
	for i := range c.publishers {
		p, err := dial()
		if err != nil {
			return result{}, fmt.Errorf("publisher %d: %w", i, err)
		}
		prefix := strconv.Itoa(i) + " "
		body := []byte(prefix + strings.Repeat("x", max(c.size-len(prefix), 0)))
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case slots[i] <- struct{}{}:
				}
				if err := p.Send(dest, "text/plain", body); err != nil {
					sendErr <- err
					return
				}
			}
		})
	}
	defer wg.Wait()
	defer cancel()

	wait := func(d time.Duration) error {
		select {
		case <-time.After(d):
			return nil
		case err := <-readErr:
			return fmt.Errorf("subscriber: %w", err)
		case err := <-sendErr:
			return fmt.Errorf("publisher: %w", err)
		}
	}
	if err := wait(c.warmup); err != nil {
		return result{}, err
	}
	d0, t0 := delivered.Load(), serverCPU(c.pid)
	start := time.Now()
	if err := wait(c.duration); err != nil {
		return result{}, err
	}
	d1, t1 := delivered.Load(), serverCPU(c.pid)
	r := result{Delivered: d1 - d0}
	r.PerSec = float64(r.Delivered) / time.Since(start).Seconds()
	if c.pid > 0 && r.Delivered > 0 {
		r.CPUMicros = float64((t1 - t0).Microseconds()) / float64(r.Delivered)
	}
	if r.Delivered == 0 {
		return r, errors.New("nothing was delivered in the measured period")
	}
	return r, nil
}

// serverCPU is the CPU time of process pid so far, or 0 for pid 0 or a
// process whose /proc entry cannot be read.
func serverCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	cpu, _ := procstat.CPU(pid)
	return cpu
}
