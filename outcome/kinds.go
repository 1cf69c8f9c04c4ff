package outcome

// The kinds of protocol error the server finds itself, each the label of
// stompgate_protocol_error_closes_total{kind} and of the "detail" of a
// session's end in the log; ProtocolErrorKinds lists them with the
// standard stages' rejections that are counted the same way.
const (
	// KindFrameTooLarge: a frame or WebSocket message over the frame limit.
	KindFrameTooLarge = "frame_too_large"
	// KindHeaderTooLarge: too many header lines, or one too long.
	KindHeaderTooLarge = "header_too_large"
	// KindMalformed: a frame that is not STOMP, or not valid in the
	// session's state (a duplicate subscription, an unknown transaction).
	KindMalformed = "malformed"
	// KindBadEscape: an undefined escape sequence in a header (STOMP 1.2
	// "Value Encoding").
	KindBadEscape = "bad_escape"
	// KindUnknownCommand: not a STOMP client command.
	KindUnknownCommand = "unknown_command"
	// KindMissingHeader: a header the command requires is absent.
	KindMissingHeader = "missing_header"
	// KindUnsupportedVersion: no STOMP version both sides speak.
	KindUnsupportedVersion = "unsupported_version"
	// KindNotConnected: a frame before CONNECT.
	KindNotConnected = "not_connected"
	// KindInvalidUTF8: a text message, command or header that is not
	// UTF-8.
	KindInvalidUTF8 = "invalid_utf8"
	// KindNoBackend: a SEND to an app destination with no app handler.
	KindNoBackend = "no_backend"
	// KindWebSocket: a WebSocket frame that breaks RFC 6455 (unmasked,
	// reserved bits or opcodes, a bad close frame, broken fragmentation);
	// the close carries 1002 or 1007 and no ERROR frame goes out.
	KindWebSocket = "websocket"
)

// ProtocolErrorKinds returns every kind a session's protocol error is
// reported under: the server's own, then the label of each standard
// rejection that ends in CloseProtocolError or CloseAuthFailed. The slice
// is a fresh copy.
func ProtocolErrorKinds() []string {
	kinds := []string{
		KindFrameTooLarge, KindHeaderTooLarge, KindMalformed, KindBadEscape,
		KindUnknownCommand, KindMissingHeader, KindUnsupportedVersion,
		KindNotConnected, KindInvalidUTF8, KindNoBackend, KindWebSocket,
	}
	for _, r := range reasons {
		if r.close == CloseProtocolError || r.close == CloseAuthFailed {
			kinds = append(kinds, r.label)
		}
	}
	return kinds
}
