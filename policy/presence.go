package policy

import "go.yaml.in/yaml/v3"

// Presence reports whether the first rule matching dest keeps its
// members (Rule.Presence); false when no rule matches. It does not
// allocate.
func (rs *Rules) Presence(dest string) bool {
	i := rs.Index(dest)
	return i >= 0 && rs.rules[i].Presence
}

// flag reads a true/false field; absent or null is false.
func flag(n *yaml.Node, where, name string) (bool, error) {
	if n == nil || isNull(n) {
		return false, nil
	}
	var v bool
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&v) != nil {
		return false, invalidf("line %d: %s%s: %q is not true or false", n.Line, where, name, n.Value)
	}
	return v, nil
}
