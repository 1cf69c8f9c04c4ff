package broker

import (
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/stompgate/stompgate/stompframe"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// delivery is one Deliver call.
type delivery struct {
	sub *Subscription
	msg *Message
}

// recorder is a Subscriber that keeps every delivery; it refuses them
// when refuse is set.
type recorder struct {
	mu     sync.Mutex
	got    []delivery
	refuse bool
}

func (r *recorder) Deliver(sub *Subscription, m *Message, _ *Batch) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refuse {
		return false
	}
	r.got = append(r.got, delivery{sub, m})
	return true
}

func (r *recorder) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// send builds a SEND frame from name, value pairs and a body.
func send(body string, kv ...string) *stompframe.Frame {
	f := &stompframe.Frame{Command: stompframe.CommandSend, Body: []byte(body)}
	for i := 0; i+1 < len(kv); i += 2 {
		f.Add(kv[i], kv[i+1])
	}
	return f
}

// decode decodes exactly one frame from b as version v, failing the test
// on an error or on bytes left over.
func decode(t *testing.T, b []byte, v stompframe.Version) *stompframe.Frame {
	t.Helper()
	d := stompframe.NewDecoder(stompframe.Limits{})
	d.SetVersion(v)
	d.Feed(b)
	f, err := d.Next()
	if err != nil {
		t.Fatalf("decoding %q: %v", b, err)
	}
	if f == nil {
		t.Fatalf("decoding %q: incomplete frame", b)
	}
	f = f.Clone()
	if rest, err := d.Next(); rest != nil || err != nil {
		t.Fatalf("decoding %q: more after the frame: %v, %v", b, rest, err)
	}
	return f
}
