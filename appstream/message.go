package appstream

import (
	"encoding/json"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Message is an app message as a backend reads it from the stream.
type Message struct {
	// StreamID is the entry's id in the stream, for XACK.
	StreamID string
	// Destination, Principal, Session, Instance and ID are the fields
	// of the same names (see server.AppMessage).
	Destination, Principal, Session, Instance, ID string
	// Headers are the SEND's user headers.
	Headers map[string]string
	// Body is the SEND's body.
	Body []byte
	// Traceparent is the W3C traceparent of a SEND the server traced
	// (server.AppMessage.Trace), for the backend to continue its trace;
	// empty for the others.
	Traceparent string
}

// Parse turns a stream entry written by Handler into a Message. An entry
// without a destination or with headers that are not a JSON object is an
// error.
func Parse(e redis.XMessage) (Message, error) {
	str := func(k string) string {
		s, _ := e.Values[k].(string)
		return s
	}
	m := Message{
		StreamID:    e.ID,
		Destination: str("destination"),
		Principal:   str("principal"),
		Session:     str("session"),
		Instance:    str("instance"),
		ID:          str("id"),
		Body:        []byte(str("body")),
		Traceparent: str("traceparent"),
	}
	if m.Destination == "" {
		return m, fmt.Errorf("appstream: entry %s has no destination", e.ID)
	}
	if h := str("headers"); h != "" {
		if err := json.Unmarshal([]byte(h), &m.Headers); err != nil {
			return m, fmt.Errorf("appstream: entry %s: headers: %w", e.ID, err)
		}
	}
	return m, nil
}
