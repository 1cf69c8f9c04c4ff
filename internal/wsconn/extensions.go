package wsconn

import (
	"net/http"
	"strconv"
	"strings"
)

// CompressionOptions turns on permessage-deflate (RFC 7692) for the
// connections Accept makes, when the client offers it.
//
// By default the server compresses each message on its own
// (server_no_context_takeover) and asks the client to do the same
// (client_no_context_takeover, which RFC 7692 section 7.1.1.1 lets a
// server ask for unasked): neither side keeps a window between messages,
// so an idle connection holds no compressor or decompressor (both come
// from pools while a message is in hand), and one compressed encoding of
// a message can be written to every connection that negotiated it.
type CompressionOptions struct {
	// Level is the compress/flate level of the messages the server
	// compresses: 1 (flate.BestSpeed) to 9 (flate.BestCompression).
	// Zero means DefaultCompressionLevel. Under ContextTakeover, level
	// 1 compresses as 2: flate.BestSpeed keeps no window from one
	// message to the next.
	Level int
	// MinSize is the payload size below which the server sends a
	// message uncompressed: deflate's framing costs more than it saves on
	// tiny messages. Zero means DefaultCompressionMinSize; negative
	// compresses every message.
	MinSize int
	// ContextTakeover keeps a compressor per connection for the whole
	// of its output, so each message is compressed with the ones before
	// it as its dictionary: several times smaller for short, similar
	// messages (chat), at the cost of a compressor held by every
	// connection for its whole life, idle or not, and a compression per
	// connection instead of one per broadcast. Off by default.
	ContextTakeover bool
}

// DefaultCompressionLevel is the default CompressionOptions.Level:
// flate.DefaultCompression's level. On 4 KB JSON frames it writes 15 %
// fewer bytes than flate.BestSpeed for 1.5 to 1.7 times the CPU of one
// compression (BenchmarkDeflateRatio), a cost that one encoding shared
// by many connections (AppendDeflated) spreads over all of them.
const DefaultCompressionLevel = 6

// DefaultCompressionMinSize is the default CompressionOptions.MinSize. A
// message's deflate stream costs a block header and, without context
// takeover, its own Huffman tables: on STOMP frames under about 128
// bytes it saves little or nothing.
const DefaultCompressionMinSize = 128

// extensionName is the only extension the server negotiates.
const extensionName = "permessage-deflate"

// deflateParams are the parameters of one accepted permessage-deflate
// offer.
type deflateParams struct {
	// clientMaxWindowBits is the client_max_window_bits the client
	// offered with a value, or 0.
	clientMaxWindowBits int
	// serverNoTakeover: the client offered server_no_context_takeover,
	// which the server must then honour (RFC 7692 section 7.1.1.1).
	serverNoTakeover bool
}

// negotiateDeflate returns the first permessage-deflate offer of the
// request's Sec-WebSocket-Extensions that the server can accept, and
// whether there is one. An offer is declined (RFC 7692 section 5) when it
// has a parameter twice, a parameter that is not one of the four, or a
// value that is not valid for its parameter; and, because compress/flate
// always compresses with a 32 KiB window, when it limits the server's
// window below 15 bits (server_max_window_bits=8..14).
func negotiateDeflate(h http.Header) (deflateParams, bool) {
	for _, offer := range splitOffers(h.Values("Sec-WebSocket-Extensions")) {
		if len(offer) == 0 || !strings.EqualFold(offer[0].name, extensionName) || offer[0].hasValue {
			continue
		}
		if p, ok := acceptDeflate(offer[1:]); ok {
			return p, true
		}
	}
	return deflateParams{}, false
}

// acceptDeflate checks the parameters of one permessage-deflate offer.
func acceptDeflate(params []extParam) (deflateParams, bool) {
	var p deflateParams
	seen := map[string]bool{}
	for _, x := range params {
		name := strings.ToLower(x.name)
		if seen[name] {
			return p, false
		}
		seen[name] = true
		switch name {
		case "server_no_context_takeover", "client_no_context_takeover":
			if x.hasValue {
				return p, false
			}
			if name == "server_no_context_takeover" {
				p.serverNoTakeover = true
			}
		case "server_max_window_bits":
			bits, ok := windowBits(x)
			if !ok || bits != 15 {
				return p, false
			}
		case "client_max_window_bits":
			if !x.hasValue {
				continue
			}
			bits, ok := windowBits(x)
			if !ok {
				return p, false
			}
			p.clientMaxWindowBits = bits
		default:
			return p, false
		}
	}
	return p, true
}

// windowBits reads a window-bits value: a decimal integer from 8 to 15
// without leading zeros (RFC 7692 section 7.1.2).
func windowBits(x extParam) (int, bool) {
	v := x.value
	if !x.hasValue || len(v) == 0 || len(v) > 2 || v[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, false
		}
	}
	n, _ := strconv.Atoi(v)
	return n, n >= 8 && n <= 15
}

// deflateResponse is the Sec-WebSocket-Extensions answer to an accepted
// offer, the server taking context over when contextTakeover is set and
// the client did not forbid it.
func deflateResponse(p deflateParams, contextTakeover bool) string {
	s := extensionName
	if !contextTakeover || p.serverNoTakeover {
		s += "; server_no_context_takeover"
	}
	s += "; client_no_context_takeover"
	if p.clientMaxWindowBits != 0 {
		s += "; client_max_window_bits=" + strconv.Itoa(p.clientMaxWindowBits)
	}
	return s
}

// extParam is one element of an extension offer: the extension's name
// first, then its parameters.
type extParam struct {
	name     string
	value    string
	hasValue bool
}

// splitOffers parses Sec-WebSocket-Extensions values (RFC 6455 section
// 9.1: offers separated by commas, parameters by semicolons, a value a
// token or a quoted string) into offers. A malformed offer comes back
// empty, so it is declined without affecting the others.
func splitOffers(values []string) [][]extParam {
	var out [][]extParam
	for _, v := range values {
		for _, raw := range splitOutsideQuotes(v, ',') {
			if strings.TrimSpace(raw) == "" {
				continue
			}
			var offer []extParam
			for _, part := range splitOutsideQuotes(raw, ';') {
				x, ok := parseParam(part)
				if !ok {
					offer = nil
					break
				}
				offer = append(offer, x)
			}
			out = append(out, offer)
		}
	}
	return out
}

// splitOutsideQuotes splits s at sep where sep is not inside a quoted
// string.
func splitOutsideQuotes(s string, sep byte) []string {
	var out []string
	quoted, start := false, 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '"':
			quoted = !quoted
		case s[i] == '\\' && quoted:
			i++
		case s[i] == sep && !quoted:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// parseParam parses "name" or "name=value" (the value a token or a quoted
// string, unquoted here).
func parseParam(s string) (extParam, bool) {
	name, value, hasValue := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !isToken(name) {
		return extParam{}, false
	}
	if !hasValue {
		return extParam{name: name}, true
	}
	value = strings.TrimSpace(value)
	if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
		value = strings.ReplaceAll(value[1:len(value)-1], `\`, "")
	}
	if !isToken(value) {
		return extParam{}, false
	}
	return extParam{name: name, value: value, hasValue: true}, true
}

// isToken reports whether s is an HTTP token (RFC 9110 section 5.6.2).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}
