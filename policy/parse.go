package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

	"go.yaml.in/yaml/v3"
)

// Parse parses a policy document in YAML and validates it.
//
// The document is one mapping with the field zones: a list of zones with
// the fields name, key, rate, burst, max_connections, size and routes, each
// route with method, path and upstream (see default.yaml, and Zone and
// Route for what the fields mean); and optionally destinations: a list of
// rules with the fields name, pattern, send and principal ({limit,
// window}), commands, client_send, delivery and max_subscribers (see Rule). Parsing is strict: an unknown or repeated field, a value
// of the wrong kind or a second document is an error that gives the line
// and the zone. An absent key means KeyClientIP and an absent size
// DefaultSize; both are filled in. The policy is then checked with
// Validate, whose errors name the zone and field: `policy: zone
// "ws_handshake": burst -1 is negative`.
//
// Every error Parse returns matches ErrInvalid.
func Parse(data []byte) (Policy, error) {
	p, err := parse(data)
	if err != nil {
		return Policy{}, prefixed("policy: ", err)
	}
	return p, nil
}

// parse is Parse without the package prefix on errors.
func parse(data []byte) (Policy, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return Policy{}, invalidf("no zones")
		}
		return Policy{}, invalidf("%v", err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return Policy{}, invalidf("line %d: a second YAML document; a policy holds one", next.Line)
	case !errors.Is(err, io.EOF):
		return Policy{}, invalidf("%v", err)
	}

	p, err := decodePolicy(&doc)
	if err != nil {
		return Policy{}, err
	}
	for i := range p.Zones {
		z := &p.Zones[i]
		if z.Key == "" {
			z.Key = KeyClientIP
		}
		if z.Size == "" {
			z.Size = DefaultSize
		}
	}
	if err := p.validate(); err != nil {
		return Policy{}, err
	}
	return p, nil
}

// decodePolicy reads the top-level mapping.
func decodePolicy(doc *yaml.Node) (Policy, error) {
	n := resolve(doc)
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = resolve(n.Content[0])
	}
	if isNull(n) {
		return Policy{}, invalidf("no zones")
	}
	fs, err := fields(n, "", "zones", "destinations")
	if err != nil {
		return Policy{}, err
	}
	rules, err := decodeRules(fs["destinations"])
	if err != nil {
		return Policy{}, err
	}
	zones := fs["zones"]
	if zones == nil || isNull(zones) {
		return Policy{}, invalidf("no zones")
	}
	if zones.Kind != yaml.SequenceNode {
		return Policy{}, invalidf("line %d: zones must be a list", zones.Line)
	}
	p := Policy{Destinations: rules}
	for i, zn := range zones.Content {
		z, err := decodeZone(resolve(zn), i)
		if err != nil {
			return Policy{}, err
		}
		p.Zones = append(p.Zones, z)
	}
	return p, nil
}

// decodeZone reads one item of the zones list; i is its index, used to
// name the zone in errors until its name is known.
func decodeZone(n *yaml.Node, i int) (Zone, error) {
	where := fmt.Sprintf("zone %d: ", i+1)
	if n.Kind == yaml.MappingNode {
		// Name the zone in every error, wherever the name field stands.
		for k := 0; k+1 < len(n.Content); k += 2 {
			if n.Content[k].Value == "name" && resolve(n.Content[k+1]).Kind == yaml.ScalarNode {
				where = fmt.Sprintf("zone %q: ", resolve(n.Content[k+1]).Value)
			}
		}
	}
	fs, err := fields(n, where, "name", "key", "rate", "burst", "max_connections", "size", "routes")
	if err != nil {
		return Zone{}, err
	}
	var z Zone
	if z.Name, err = scalar(fs["name"], where, "name"); err != nil {
		return Zone{}, err
	}
	if z.Key, err = scalar(fs["key"], where, "key"); err != nil {
		return Zone{}, err
	}
	if z.Size, err = scalar(fs["size"], where, "size"); err != nil {
		return Zone{}, err
	}
	if rn := fs["rate"]; rn != nil {
		s, err := scalar(rn, where, "rate")
		if err != nil {
			return Zone{}, err
		}
		if z.Rate, err = parseRate(s); err != nil {
			return Zone{}, invalidf("line %d: %s%v", rn.Line, where, err)
		}
	}
	if bn := fs["burst"]; bn != nil {
		if bn.Kind != yaml.ScalarNode || bn.ShortTag() != "!!int" || bn.Decode(&z.Burst) != nil {
			return Zone{}, invalidf("line %d: %sburst %q is not a whole number", bn.Line, where, bn.Value)
		}
	}
	if mn := fs["max_connections"]; mn != nil {
		if mn.Kind != yaml.ScalarNode || mn.ShortTag() != "!!int" || mn.Decode(&z.MaxConnections) != nil {
			return Zone{}, invalidf("line %d: %smax_connections %q is not a whole number", mn.Line, where, mn.Value)
		}
	}
	if rn := fs["routes"]; rn != nil && !isNull(rn) {
		if rn.Kind != yaml.SequenceNode {
			return Zone{}, invalidf("line %d: %sroutes must be a list", rn.Line, where)
		}
		for j, item := range rn.Content {
			r, err := decodeRoute(resolve(item), fmt.Sprintf("%sroute %d: ", where, j+1))
			if err != nil {
				return Zone{}, err
			}
			z.Routes = append(z.Routes, r)
		}
	}
	return z, nil
}

// decodeRoute reads one item of a zone's routes list.
func decodeRoute(n *yaml.Node, where string) (Route, error) {
	fs, err := fields(n, where, "method", "path", "upstream")
	if err != nil {
		return Route{}, err
	}
	var r Route
	if r.Method, err = scalar(fs["method"], where, "method"); err != nil {
		return Route{}, err
	}
	if r.Path, err = scalar(fs["path"], where, "path"); err != nil {
		return Route{}, err
	}
	if r.Upstream, err = scalar(fs["upstream"], where, "upstream"); err != nil {
		return Route{}, err
	}
	return r, nil
}

// fields returns the values of mapping n by key, refusing keys that are
// not in known or that appear twice. where prefixes error messages.
func fields(n *yaml.Node, where string, known ...string) (map[string]*yaml.Node, error) {
	if n.Kind != yaml.MappingNode {
		return nil, invalidf("line %d: %sexpected a mapping with fields %v", n.Line, where, known)
	}
	out := make(map[string]*yaml.Node, len(known))
	for k := 0; k+1 < len(n.Content); k += 2 {
		key, val := resolve(n.Content[k]), resolve(n.Content[k+1])
		if key.Kind != yaml.ScalarNode || !slices.Contains(known, key.Value) {
			return nil, invalidf("line %d: %sunknown field %q", key.Line, where, key.Value)
		}
		if _, dup := out[key.Value]; dup {
			return nil, invalidf("line %d: %sfield %q is repeated", key.Line, where, key.Value)
		}
		out[key.Value] = val
	}
	return out, nil
}

// scalar returns the text of a scalar field; an absent or null field is
// "".
func scalar(n *yaml.Node, where, name string) (string, error) {
	if n == nil || isNull(n) {
		return "", nil
	}
	if n.Kind != yaml.ScalarNode {
		return "", invalidf("line %d: %s%s must be a single value", n.Line, where, name)
	}
	return n.Value, nil
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// isNull reports whether n is an empty or null value ("key:" or "~").
func isNull(n *yaml.Node) bool {
	return n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}
