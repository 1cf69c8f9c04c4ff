package server

import (
	"encoding/binary"
	"unicode/utf8"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/history"
	"github.com/stompgate/stompgate/internal/lenfield"
	"github.com/stompgate/stompgate/stompframe"
)

// maxEntryHeaders bounds the header count an entry may claim when it is
// decoded, as the relay's wire format does.
const maxEntryHeaders = 1024

// memoryHistory is the HistoryLog of a single instance: a
// history.MemoryStore, whose AppendDeliver gives each message its
// position and delivers it to the local broker in offset order.
type memoryHistory struct {
	store  *history.MemoryStore
	broker *broker.Broker
}

// NewMemoryHistory returns the HistoryLog of a single instance, which
// keeps the histories in store and delivers through b, the server's
// Config.Broker. An entry holds the message's headers and body; it never
// leaves the process, so it is not signed.
func NewMemoryHistory(store *history.MemoryStore, b *broker.Broker) HistoryLog {
	return memoryHistory{store: store, broker: b}
}

// Append appends m and delivers it, with its position, before any later
// message of its destination.
func (h memoryHistory) Append(m *broker.Message, r history.Retention) (int, bool) {
	n := 0
	_, err := h.store.AppendDeliver(m.Destination, encodeEntry(m), r, func(pos history.Position) {
		hs := append(append(make([]stompframe.Header, 0, len(m.Headers())+2), m.Headers()...), positionOf(pos)...)
		n = h.broker.Publish(broker.NewMessageParts(m.ID, m.Destination, hs, m.Body()).KeepArrival(m))
	})
	return n, err == nil
}

// Decode reads an entry Append made.
func (h memoryHistory) Decode(dest string, data []byte, r history.Retention) ([]stompframe.Header, []byte, bool) {
	return decodeEntry(data)
}

// encodeEntry encodes m's headers and body: the header count, each
// name and value length-prefixed (uvarint), then the body.
func encodeEntry(m *broker.Message) []byte {
	hs := m.Headers()
	n := binary.MaxVarintLen64 + len(m.Body())
	for _, h := range hs {
		n += 2*binary.MaxVarintLen64 + len(h.Name) + len(h.Value)
	}
	b := binary.AppendUvarint(make([]byte, 0, n), uint64(len(hs)))
	for _, h := range hs {
		b = binary.AppendUvarint(b, uint64(len(h.Name)))
		b = append(b, h.Name...)
		b = binary.AppendUvarint(b, uint64(len(h.Value)))
		b = append(b, h.Value...)
	}
	return append(b, m.Body()...)
}

// decodeEntry reads encodeEntry's output; ok is false for anything
// else.
func decodeEntry(b []byte) (hs []stompframe.Header, body []byte, ok bool) {
	r := lenfield.Reader{S: string(b)}
	n := r.Uvarint()
	if r.Bad || n > maxEntryHeaders {
		return nil, nil, false
	}
	hs = make([]stompframe.Header, 0, n+2)
	for range n {
		name, value := r.String(), r.String()
		if r.Bad || !utf8.ValidString(name) || !utf8.ValidString(value) {
			return nil, nil, false
		}
		hs = append(hs, stompframe.Header{Name: name, Value: value})
	}
	return hs, []byte(r.S), true
}
