// Package podenv computes a container's environment and expands $(VAR)
// references the way the kubelet does, so that pod specs written for a real
// cluster behave the same on the process node.
package podenv

import "strings"

// Expand replaces $(NAME) with lookup(NAME). Following the kubelet's rules,
// "$$" yields a literal "$", a reference to an unknown name is left as written,
// and a "$" not followed by "(" or "$" (or an unterminated "$(") is kept.
func Expand(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				// Unterminated reference: the rest is literal text.
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok && name != "" {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// MapLookup returns a lookup function over the given maps, consulted in order.
func MapLookup(maps ...map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		for _, m := range maps {
			if v, ok := m[name]; ok {
				return v, true
			}
		}
		return "", false
	}
}
