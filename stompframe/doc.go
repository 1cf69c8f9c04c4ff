// Package stompframe decodes, encodes and validates STOMP 1.0, 1.1 and 1.2
// frames carried in WebSocket messages.
//
// The wire format follows the STOMP 1.2 specification
// (https://stomp.github.io/stomp-specification-1.2.html):
//
//   - Augmented BNF: a frame is a command line, header lines, a blank line,
//     a body and a NUL octet; EOL is an optional CR followed by LF, so
//     CRLF and LF line endings are both accepted. Commands are upper-case
//     letters only. Header names and values never contain a raw CR or LF;
//     a raw CR inside a header line is rejected. The grammar also excludes a
//     raw colon from values; this package tolerates one (the first colon
//     splits name from value) because STOMP 1.0 clients send them.
//   - Value Encoding: in 1.2 the escapes \r, \n, \c and \\ stand for CR, LF,
//     colon and backslash; 1.1 has the same set without \r; 1.0 has none.
//     Any other escape, including a backslash at the end of a name or
//     value, is a fatal protocol error (ErrBadEscape). CONNECT, STOMP and
//     CONNECTED frames are never escaped, whatever the version, so that 1.0
//     peers can read them before a version is negotiated.
//   - Value Encoding also makes commands and headers UTF-8: a command or
//     header line that is not valid UTF-8 is rejected (ErrInvalidUTF8), in
//     every version, so a server never relays such bytes. Bodies are
//     octets and are not checked.
//   - Header content-length: when present, exactly that many body octets
//     are read, NUL octets included, and a NUL must follow them.
//   - Repeated Header Entries: every occurrence is kept in wire order, and
//     only the first one counts (Frame.Get, Frame.Lookup, content-length).
//   - Size Limits: Limits bounds the frame size, the number of header lines
//     and the length of one line. A frame that claims more than the limit
//     in content-length is rejected as soon as its header block is read,
//     and a frame that grows past the limit across several messages is
//     rejected as soon as it does, so a Decoder never holds more than about
//     one maximum-size frame.
//   - Heart-beating: EOLs between frames (and before the first one) are
//     heart-beats; the Decoder skips and counts them.
//
// A WebSocket message may carry one frame, several frames, part of a frame,
// or only heart-beats; the Decoder reassembles frames from the stream of
// messages of one session. The frames it returns alias its input and are
// valid until the next call; Frame.Clone makes a copy that is not.
//
// Errors from the Decoder are *ProtocolError values: the server answers
// them with an ERROR frame (Message in its message header, Detail in its
// body) and closes the session.
package stompframe
