package appstream

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/server"
)

//go:embed append.lua
var appendSource string

// appendScript checks the bounds, appends and counts in one step (see
// append.lua).
var appendScript = redis.NewScript(appendSource)

// EntryOverhead is what each message is charged beyond its fields'
// bytes: Redis' own cost of a stream entry (its id and listpack headers,
// a share of the radix tree node) and of its ledger entry. It makes a
// flood of tiny messages count, too; measured at about 100 bytes per
// message with redis-server 7.0 (see BENCHMARKS.md).
const EntryOverhead = 128

// releaseBudget is the most acknowledged messages one append releases.
// Each costs a ledger entry of some tens of bytes read and a few HINCRBYs,
// so 1,024 keep one call well under a millisecond, while a backend that
// catches up on a long backlog is released within a few appends: every
// append releases at most this many and adds one.
const releaseBudget = 1024

// unknownAddress stands for a sender whose address the server could not
// tell; such senders share one address bound.
const unknownAddress = "unknown"

// keys returns the stream's key, its ledger's and its counters'. They
// share the stream's hash tag, or the stream's whole name as one when it
// has none, so that the script's keys sit in one Redis Cluster slot: a
// key without a tag hashes its whole name, as "{name}..." does.
func keys(stream string) [3]string {
	tag := "{" + stream + "}"
	if i := strings.IndexByte(stream, '{'); i >= 0 {
		if j := strings.IndexByte(stream[i+1:], '}'); j > 0 {
			tag = stream
		}
	}
	return [3]string{stream, tag + ":ledger", tag + ":backlog"}
}

// charge returns the bytes a message with these fields is counted for.
func charge(fields []any) int64 {
	n := int64(EntryOverhead)
	for _, f := range fields {
		switch v := f.(type) {
		case string:
			n += int64(len(v))
		case []byte:
			n += int64(len(v))
		}
	}
	return n
}

func (h *Handler) append(ctx context.Context, m server.AppMessage) error {
	fields := h.fields(m)
	addr := unknownAddress
	if m.RemoteIP.IsValid() {
		addr = m.RemoteIP.String()
		if h.cfg.AddressKey != nil {
			addr = h.cfg.AddressKey(m.RemoteIP)
		}
	}
	c := h.cfg
	args := make([]any, 0, 8+len(fields))
	args = append(args, m.Principal, addr, charge(fields),
		c.MaxPrincipalBytes, c.MaxAddressBytes, c.MaxTotalBytes, c.MaxLen, releaseBudget)
	args = append(args, fields...)
	res, err := appendScript.Run(ctx, c.Client, h.keys[:], args...).Slice()
	if err != nil {
		return err
	}
	if len(res) != 2 {
		return fmt.Errorf("appstream: append script answered %v", res)
	}
	if ok, _ := res[0].(int64); ok == 1 {
		return nil
	}
	bound, _ := res[1].(string)
	return &server.AppBacklogError{Bound: bound}
}

// Backlog is what waits for the backend: messages appended and not yet
// acknowledged by every consumer group.
type Backlog struct {
	// Entries is the number of messages waiting.
	Entries int64
	// Bytes is what they are charged for, in total.
	Bytes int64
}

// Backlog reports what waits for the backend, as of the last append: an
// acknowledgement is released by the next append, not at once.
func (h *Handler) Backlog(ctx context.Context) (Backlog, error) {
	n, err := h.cfg.Client.XLen(ctx, h.keys[1]).Result()
	if err != nil {
		return Backlog{}, err
	}
	t, err := h.cfg.Client.HGet(ctx, h.keys[2], "t").Result()
	if errors.Is(err, redis.Nil) {
		return Backlog{Entries: n}, nil
	}
	if err != nil {
		return Backlog{}, err
	}
	b, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return Backlog{}, fmt.Errorf("appstream: backlog counter %q: %w", t, err)
	}
	return Backlog{Entries: n, Bytes: b}, nil
}
