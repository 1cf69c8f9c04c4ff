//go:build linux

package client

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// cmsg builds one control message as the kernel lays it out: a header
// (length, level, type), the data, padding to the alignment.
func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, cmsgHeaderLen, cmsgAlign(cmsgHeaderLen+len(data)))
	putWord(b, int64(cmsgHeaderLen+len(data)))
	binary.NativeEndian.PutUint32(b[wordSize:], uint32(level))
	binary.NativeEndian.PutUint32(b[wordSize+4:], uint32(typ))
	b = append(b, data...)
	return b[:cap(b)]
}

func putWord(b []byte, v int64) {
	if wordSize == 8 {
		binary.NativeEndian.PutUint64(b, uint64(v))
	} else {
		binary.NativeEndian.PutUint32(b, uint32(v))
	}
}

// timespec is a struct timespec of two words.
func timespec(sec, nsec int64) []byte {
	b := make([]byte, 2*wordSize)
	putWord(b, sec)
	putWord(b[wordSize:], nsec)
	return b
}

func TestParseRecvStamp(t *testing.T) {
	const sec, nsec = 1_790_000_000, 123_456_789
	stamp := cmsg(syscall.SOL_SOCKET, syscall.SCM_TIMESTAMPNS, timespec(sec, nsec))
	other := cmsg(syscall.SOL_SOCKET, syscall.SCM_RIGHTS, []byte{1, 2, 3, 4})
	ipLevel := cmsg(syscall.IPPROTO_IP, syscall.SCM_TIMESTAMPNS, timespec(sec, nsec))
	truncated := stamp[:len(stamp)-wordSize]
	lying := append([]byte(nil), stamp...)
	putWord(lying, int64(len(stamp)+64))
	for _, tc := range []struct {
		name string
		oob  []byte
		ns   int64
		ok   bool
	}{
		{"the stamp alone", stamp, sec*1e9 + nsec, true},
		{"after another message", append(append([]byte(nil), other...), stamp...), sec*1e9 + nsec, true},
		{"none", nil, 0, false},
		{"another message only", other, 0, false},
		{"another level", ipLevel, 0, false},
		{"truncated", truncated, 0, false},
		{"length beyond the buffer", lying, 0, false},
		{"header only", stamp[:cmsgHeaderLen], 0, false},
		{"nanoseconds out of range", cmsg(syscall.SOL_SOCKET, syscall.SCM_TIMESTAMPNS, timespec(sec, 1e9)), 0, false},
		{"zero time", cmsg(syscall.SOL_SOCKET, syscall.SCM_TIMESTAMPNS, timespec(0, 0)), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns, ok := parseRecvStamp(tc.oob)
			if ns != tc.ns || ok != tc.ok {
				t.Errorf("parseRecvStamp = %d, %v; want %d, %v", ns, ok, tc.ns, tc.ok)
			}
		})
	}
}

func TestParseRecvStampAllocs(t *testing.T) {
	oob := cmsg(syscall.SOL_SOCKET, syscall.SCM_TIMESTAMPNS, timespec(1_790_000_000, 1))
	if n := testing.AllocsPerRun(100, func() { parseRecvStamp(oob) }); n != 0 {
		t.Errorf("parseRecvStamp allocates %v times, want 0", n)
	}
}

// TestStampedConnOnLoopback reads through a stamped TCP connection: each
// read keeps a kernel receive time between the write and the read's
// return, and the connection still reads EOF and honours deadlines.
func TestStampedConnOnLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	ctx, slot := withStampSlot(context.Background())
	c, err := stampingDial((&net.Dialer{}).DialContext)(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	peer := <-accepted
	if peer == nil {
		t.Fatal("accept failed")
	}
	defer peer.Close()
	if slot.stamps == nil {
		t.Fatal("the dial left no stamps in the slot")
	}
	if _, ok := slot.stamps.Last(); ok {
		t.Error("a stamp before any read")
	}
	var none *RecvStamps
	if _, ok := none.Last(); ok {
		t.Error("nil stamps have a time")
	}
	buf := make([]byte, 64)
	// The kernel turns receive stamping on in deferred work when the
	// first socket of the system asks for it: the reads right after may
	// come unstamped. Write and read until one is stamped.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := peer.Write([]byte("warm")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf[:4]); err != nil {
			t.Fatal(err)
		}
		if _, ok := slot.stamps.Last(); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no read was stamped within 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for i := range 3 {
		before := time.Now()
		if _, err := peer.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		n, err := c.Read(buf)
		after := time.Now()
		if err != nil || string(buf[:n]) != "hello" {
			t.Fatalf("read %d: %q, %v; want hello", i, buf[:n], err)
		}
		k, ok := slot.stamps.Last()
		if !ok {
			t.Fatalf("read %d: no kernel stamp", i)
		}
		if k.Before(before.Add(-time.Millisecond)) || k.After(after) {
			t.Errorf("read %d: kernel stamp %v outside [write %v, read %v]", i, k, before, after)
		}
	}
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(buf); err == nil {
		t.Error("read past the deadline succeeded")
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Errorf("read past the deadline: %v, want a timeout", err)
	}
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	peer.Close()
	if n, err := c.Read(buf); n != 0 || err != io.EOF {
		t.Errorf("read after the peer closed: %d, %v; want 0, EOF", n, err)
	}
}

// TestDialWithoutSlot: a dial under a context with no slot is not
// wrapped.
func TestDialWithoutSlot(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := stampingDial((&net.Dialer{}).DialContext)(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(*net.TCPConn); !ok {
		t.Errorf("dialed %T, want the plain *net.TCPConn", c)
	}
}
