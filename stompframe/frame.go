package stompframe

// Commands defined by STOMP 1.2. The Decoder returns these exact strings
// for known commands, so comparing against them costs no allocation.
const (
	CommandConnect     = "CONNECT"
	CommandStomp       = "STOMP"
	CommandConnected   = "CONNECTED"
	CommandSend        = "SEND"
	CommandSubscribe   = "SUBSCRIBE"
	CommandUnsubscribe = "UNSUBSCRIBE"
	CommandAck         = "ACK"
	CommandNack        = "NACK"
	CommandBegin       = "BEGIN"
	CommandCommit      = "COMMIT"
	CommandAbort       = "ABORT"
	CommandDisconnect  = "DISCONNECT"
	CommandMessage     = "MESSAGE"
	CommandReceipt     = "RECEIPT"
	CommandError       = "ERROR"
)

// BodyAllowed reports whether STOMP 1.2 lets frames with this command carry
// a body: only SEND, MESSAGE and ERROR may. The Decoder does not enforce
// this; a server that wants to may reject other frames with a body.
func BodyAllowed(command string) bool {
	switch command {
	case CommandSend, CommandMessage, CommandError:
		return true
	}
	return false
}

// Header is one header entry, unescaped.
type Header struct {
	Name, Value string
}

// Frame is one STOMP frame. Headers keep wire order; a repeated header keeps
// every occurrence, but Get and Lookup return the first, the one STOMP 1.2
// (Repeated Header Entries) says counts. The zero Frame is an empty frame
// with no command. A Frame is not safe for concurrent mutation.
type Frame struct {
	// Command is the frame's command, such as "SEND".
	Command string
	// Headers are the frame's headers in wire order, unescaped.
	Headers []Header
	// Body is the frame's body, without the terminating NUL.
	Body []byte
}

// Lookup returns the value of the first header named name, and whether
// there is one. Names are case-sensitive, as in STOMP.
func (f *Frame) Lookup(name string) (string, bool) {
	for i := range f.Headers {
		if f.Headers[i].Name == name {
			return f.Headers[i].Value, true
		}
	}
	return "", false
}

// Get returns the value of the first header named name, or "" if there is
// none.
func (f *Frame) Get(name string) string {
	v, _ := f.Lookup(name)
	return v
}

// Add appends a header, even if one with the same name exists.
func (f *Frame) Add(name, value string) {
	f.Headers = append(f.Headers, Header{Name: name, Value: value})
}

// Set replaces the value of the first header named name, or appends the
// header if there is none. Later occurrences are left alone; they do not
// count anyway.
func (f *Frame) Set(name, value string) {
	for i := range f.Headers {
		if f.Headers[i].Name == name {
			f.Headers[i].Value = value
			return
		}
	}
	f.Add(name, value)
}

// Del removes every header named name.
func (f *Frame) Del(name string) {
	kept := f.Headers[:0]
	for _, h := range f.Headers {
		if h.Name != name {
			kept = append(kept, h)
		}
	}
	clear(f.Headers[len(kept):])
	f.Headers = kept
}

// Clone returns a deep copy of f that shares no memory with it, for callers
// that keep a frame past the next call to Decoder.Next or Decoder.Feed.
func (f *Frame) Clone() *Frame {
	c := &Frame{Command: f.Command}
	if f.Headers != nil {
		c.Headers = append(make([]Header, 0, len(f.Headers)), f.Headers...)
	}
	if f.Body != nil {
		c.Body = append(make([]byte, 0, len(f.Body)), f.Body...)
	}
	return c
}
