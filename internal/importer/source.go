package importer

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// source is one document being converted. It hands out the fields a
// converter reads and remembers them, so that whatever was not read can be
// reported: a field is either mapped (used), dropped with a reason, or
// left over, and left overs are reported too.
type source struct {
	obj      map[string]any
	used     map[string]bool
	touched  map[string]bool // every ancestor of a used or dropped path
	reasons  map[string]string
	dropped  []Dropped
	leftover string // the reason given to fields no converter read
}

func newSource(obj map[string]any) *source {
	return &source{obj: obj, used: map[string]bool{}, touched: map[string]bool{}, reasons: map[string]string{},
		leftover: "no TrainingJob field carries it"}
}

// path is a field path: string keys and int indices.
type path []any

func (p path) child(elems ...any) path {
	out := make(path, 0, len(p)+len(elems))
	return append(append(out, p...), elems...)
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// String spells the path as users write it: spec.tasks[0].name, and
// metadata.annotations["kubedl.io/x"] for keys that are not identifiers.
func (p path) String() string {
	var b strings.Builder
	for i, e := range p {
		switch v := e.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", v)
		case string:
			switch {
			case !identifier.MatchString(v):
				fmt.Fprintf(&b, "[%q]", v)
			case i > 0:
				b.WriteString("." + v)
			default:
				b.WriteString(v)
			}
		}
	}
	return b.String()
}

// get is the value at p, if there is one (null counts as none).
func (s *source) get(p path) (any, bool) {
	var cur any = s.obj
	for _, e := range p {
		switch k := e.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = m[k]; !ok {
				return nil, false
			}
		case int:
			l, ok := cur.([]any)
			if !ok || k < 0 || k >= len(l) {
				return nil, false
			}
			cur = l[k]
		}
	}
	return cur, cur != nil
}

func (s *source) has(p path) bool { _, ok := s.get(p); return ok }

// use marks p, and everything under it, as carried over.
func (s *source) use(p path) {
	s.used[p.String()] = true
	s.touch(p)
}

func (s *source) touch(p path) {
	for i := 0; i <= len(p); i++ {
		s.touched[p[:i].String()] = true
	}
}

// drop reports p, if the document has it, as not carried over.
func (s *source) drop(p path, reason string) {
	if !s.has(p) {
		return
	}
	key := p.String()
	if s.used[key] {
		return
	}
	if _, ok := s.reasons[key]; ok {
		return
	}
	s.reasons[key] = reason
	s.touch(p)
	s.dropped = append(s.dropped, Dropped{Path: key, Reason: reason})
}

// note reports p as carried over with a different behaviour: it is used,
// and it is in the report.
func (s *source) note(p path, reason string) {
	if !s.has(p) {
		return
	}
	s.dropped = append(s.dropped, Dropped{Path: p.String(), Reason: reason})
	s.use(p)
}

// str reads a string and marks it used.
func (s *source) str(p path) string {
	v, ok := s.get(p)
	if !ok {
		return ""
	}
	s.use(p)
	switch t := v.(type) {
	case string:
		return t
	case json.Number:
		return t.String()
	case bool:
		return strconv.FormatBool(t)
	}
	return fmt.Sprint(v)
}

// integer reads a whole number (or a string holding one) and marks it used.
func (s *source) integer(p path) (int64, bool, error) {
	v, ok := s.get(p)
	if !ok {
		return 0, false, nil
	}
	s.use(p)
	var text string
	switch t := v.(type) {
	case json.Number:
		text = t.String()
	case string:
		text = t
	default:
		return 0, false, fmt.Errorf("%s: %v is not a number", p, v)
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("%s: %q is not a whole number", p, text)
	}
	return n, true, nil
}

// int32p reads a whole number that fits an int32, as a pointer (nil when
// absent).
func (s *source) int32p(p path) (*int32, error) {
	n, ok, err := s.integer(p)
	if err != nil || !ok {
		return nil, err
	}
	if n < -1<<31 || n > 1<<31-1 {
		return nil, fmt.Errorf("%s: %d is out of range", p, n)
	}
	v := int32(n)
	return &v, nil
}

// replicas reads a replica count (replicas, taskNumber, numNodes, an
// elastic bound), refusing one past the TrainingJob's bound. It is the one
// reader of every kind's counts so that the refusal comes here, at the
// source's own field, before a converter builds anything per replica (the
// XGBoostJob's worker addresses): the webhook's checks after conversion do
// not bound them, and come too late for the memory.
func (s *source) replicas(p path) (*int32, error) {
	n, err := s.int32p(p)
	if err != nil || n == nil {
		return n, err
	}
	if *n > musterv1.MaxReplicas {
		return nil, fmt.Errorf("%s: %d is more than a TrainingJob takes, %d", p, *n, musterv1.MaxReplicas)
	}
	return n, nil
}

// boolean reads true or false and marks it used.
func (s *source) boolean(p path) (bool, error) {
	v, ok := s.get(p)
	if !ok {
		return false, nil
	}
	s.use(p)
	b, isBool := v.(bool)
	if !isBool {
		return false, fmt.Errorf("%s: %v is not true or false", p, v)
	}
	return b, nil
}

// list is the length of the list at p (0 when absent). It does not mark
// anything used: the items are read one by one.
func (s *source) list(p path) int {
	v, _ := s.get(p)
	l, _ := v.([]any)
	return len(l)
}

// keys are the keys of the map at p, sorted.
func (s *source) keys(p path) []string {
	v, _ := s.get(p)
	m, _ := v.(map[string]any)
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// strings reads a list of strings and marks it used.
func (s *source) strings(p path) []string {
	var out []string
	for i := range s.list(p) {
		out = append(out, s.str(p.child(i)))
	}
	if s.has(p) {
		s.use(p)
	}
	return out
}

// decode reads the object at p into out, strictly, and marks it used.
func (s *source) decode(p path, out any) error {
	v, ok := s.get(p)
	if !ok {
		return nil
	}
	s.use(p)
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	d := json.NewDecoder(strings.NewReader(string(raw)))
	d.DisallowUnknownFields()
	if err := d.Decode(out); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return nil
}

// leftovers reports every field no converter read or dropped: a whole
// subtree at once when nothing under it was read.
func (s *source) leftovers() []Dropped {
	var out []Dropped
	var walk func(p path, v any)
	walk = func(p path, v any) {
		key := p.String()
		if s.used[key] {
			return
		}
		if _, ok := s.reasons[key]; ok {
			return
		}
		if v == nil {
			return
		}
		if len(p) > 0 && !s.touched[key] {
			out = append(out, Dropped{Path: key, Reason: s.leftover})
			return
		}
		switch t := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(p.child(k), t[k])
			}
		case []any:
			for i, e := range t {
				walk(p.child(i), e)
			}
		default:
			out = append(out, Dropped{Path: key, Reason: s.leftover})
		}
	}
	walk(nil, s.obj)
	return out
}

// report is every dropped field, explicit and left over, in path order.
func (s *source) report() []Dropped {
	return sortDropped(append(append([]Dropped{}, s.dropped...), s.leftovers()...))
}

// seen marks p as read without hiding what under it was not: an empty
// object counts as carried over, anything in it is judged field by field.
func (s *source) seen(p path) {
	if !s.has(p) {
		return
	}
	s.touch(p)
	if len(s.keys(p)) == 0 && s.list(p) == 0 {
		s.use(p)
	}
}

// mention reports p without marking anything: its fields are carried
// over, but not all of its meaning.
func (s *source) mention(p path, reason string) {
	if !s.has(p) {
		return
	}
	s.dropped = append(s.dropped, Dropped{Path: p.String(), Reason: reason})
}
