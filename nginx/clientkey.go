package nginx

import (
	"strconv"
	"strings"
)

// DefaultIPv6Prefix is the default Config.IPv6Prefix: the wsserver's
// default (clientip.DefaultIPv6Prefix), so that nginx and the server
// count an IPv6 client under the same /64.
const DefaultIPv6Prefix = 64

// clientKeyVar is the variable every limit_req_zone and limit_conn_zone
// is keyed by.
const clientKeyVar = "$stompgate_client_key"

// keyRule is one line of the client key map: a regular expression on
// $remote_addr and the key it yields.
type keyRule struct {
	Regex, Value string
}

// hexGroup is one group of an IPv6 address as nginx prints it (hex, no
// leading zeros, lower case).
const hexGroup = `[0-9a-f]{1,4}`

// clientKeyRules returns the regular expressions of the client key map
// for an IPv6 prefix of bits, a multiple of 16 between 16 and 128; the
// map's default, $remote_addr, keys everything they do not match (IPv4,
// and IPv6 at /128).
//
// nginx 1.22 has no function that masks an address, so the key is cut
// from $remote_addr's text: the first k = bits/16 groups, written out in
// full ("2001:db8:0:0::/64"). nginx prints addresses compressed, the
// longest run of zero groups as "::" (RFC 5952), so where the run falls
// decides which groups are the first k; one expression per case:
//
//   - "::ffff:a.b.c.d", an IPv4-mapped address, keys as a.b.c.d, as the
//     wsserver keys it.
//   - "::a.b.c.d" (nginx writes some addresses whose first six groups are
//     zero with a dotted tail) keys as zero groups, and at /112 with a.b
//     for the seventh group unless that is 0.0.
//   - k groups, then ":": the first k groups are written out.
//   - i < k groups, then "::" followed by at most 8-k groups: the run
//     covers the rest of the prefix, which is zeros.
//   - i < k groups, "::", then r > 8-k groups: the run is 8-i-r zero
//     groups long, and the prefix ends r-(8-k) groups into the tail.
//
// The expressions use only syntax PCRE and Go's regexp read alike, so
// tests evaluate them in Go as well as in nginx.
func clientKeyRules(bits int) []keyRule {
	k := bits / 16
	suffix := "::/" + strconv.Itoa(bits)
	rules := []keyRule{{Regex: `^::ffff:(\d+\.\d+\.\d+\.\d+)$`, Value: "$1"}}
	if k == 8 {
		return rules
	}
	zeros := func(n int) []string {
		z := make([]string, n)
		for j := range z {
			z[j] = "0"
		}
		return z
	}
	if k <= 6 {
		rules = append(rules, keyRule{Regex: `^::\d+\.\d+\.\d+\.\d+$`, Value: strings.Join(zeros(k), ":") + suffix})
	} else {
		// The seventh group is a.b; 0.0 is zero, as in "::8".
		rules = append(rules,
			keyRule{Regex: `^::0\.0\.\d+\.\d+$`, Value: strings.Join(zeros(7), ":") + suffix},
			keyRule{Regex: `^::(\d+\.\d+)\.\d+\.\d+$`, Value: strings.Join(append(zeros(6), "$1"), ":") + suffix})
	}
	// captures returns n capturing groups joined by ":" and their
	// references, numbered from first.
	captures := func(n, first int) (string, []string) {
		re := make([]string, n)
		refs := make([]string, n)
		for j := range n {
			re[j] = "(" + hexGroup + ")"
			refs[j] = "$" + strconv.Itoa(first+j)
		}
		return strings.Join(re, ":"), refs
	}
	// groups matches exactly n groups separated by ":", not captured.
	groups := func(n int) string {
		if n == 1 {
			return hexGroup
		}
		return hexGroup + "(?::" + hexGroup + "){" + strconv.Itoa(n-1) + "}"
	}

	head, refs := captures(k, 1)
	rules = append(rules, keyRule{Regex: "^" + head + ":", Value: strings.Join(refs, ":") + suffix})
	for i := range k {
		lead, leadRefs := captures(i, 1)
		pre := "^" + lead + "::"
		if i == 0 {
			pre = "^::"
		}
		// The tail holds at most 8-k groups: zeros fill the prefix.
		fill := pre + "(?:" + hexGroup + "(?::" + hexGroup + "){0," + strconv.Itoa(8-k-1) + "})?$"
		if 8-k == 1 {
			fill = pre + "(?:" + hexGroup + ")?$"
		}
		rules = append(rules, keyRule{Regex: fill, Value: strings.Join(append(leadRefs, zeros(k-i)...), ":") + suffix})
		// The tail holds r groups, the first r-(8-k) of them in the prefix.
		for r := 8 - k + 1; r <= 7-i; r++ {
			inPrefix := r - (8 - k)
			tail, tailRefs := captures(inPrefix, i+1)
			re := pre + tail + ":" + groups(8-k) + "$"
			value := append(append(leadRefs, zeros(8-i-r)...), tailRefs...)
			rules = append(rules, keyRule{Regex: re, Value: strings.Join(value, ":") + suffix})
		}
	}
	return rules
}

// checkIPv6Prefix accepts the prefix lengths the client key map can
// mirror: whole groups of 16 bits.
func checkIPv6Prefix(bits int) error {
	if bits < 16 || bits > 128 || bits%16 != 0 {
		return configErrorf("IPv6Prefix %d cannot be mirrored in nginx, which has no function to mask an address: the key is cut from the address's text in whole 16-bit groups, so use a multiple of 16 from 16 to 128 (48, 64, 128), the same for the wsserver", bits)
	}
	return nil
}
