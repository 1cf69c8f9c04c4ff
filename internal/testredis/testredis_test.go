package testredis

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestStartKillRestart(t *testing.T) {
	s := Start(t)
	if err := ping(s.Addr); err != nil {
		t.Fatalf("ping after Start = %v, want nil", err)
	}
	if got, want := s.URL(), "redis://"+s.Addr+"/0"; got != want {
		t.Errorf("URL() = %q, want %q", got, want)
	}
	s.Kill()
	if err := ping(s.Addr); err == nil {
		t.Fatal("ping after Kill = nil, want an error")
	}
	s.Kill() // idempotent
	addr := s.Addr
	s.Restart()
	if s.Addr != addr {
		t.Errorf("Addr after Restart = %q, want %q", s.Addr, addr)
	}
	if err := ping(s.Addr); err != nil {
		t.Fatalf("ping after Restart = %v, want nil", err)
	}
}

func TestExtraArgs(t *testing.T) {
	s := Start(t, "--maxmemory", "10mb")
	conn, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte("CONFIG GET maxmemory\r\n")); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(conn)
	var lines []string
	for range 5 { // *2, $9, maxmemory, $8, value
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("reading CONFIG GET reply: %v (so far %q)", err, lines)
		}
		lines = append(lines, strings.TrimSpace(line))
	}
	if got, want := lines[4], "10485760"; got != want {
		t.Errorf("maxmemory = %q, want %q (reply %q)", got, want, lines)
	}
}
