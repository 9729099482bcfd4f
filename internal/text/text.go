// Package text cuts strings copied from pods and programs into status to the
// length its schema allows, without splitting a character: a status write
// with a field over its limit is refused, and one over it on every
// reconcile would leave the job stuck.
package text

import (
	"strings"
	"unicode/utf8"
)

// marks of a cut: at the end of a string kept from its start, at the start
// of one kept from its end.
const (
	cutEnd   = "..."
	cutStart = "…"
)

// Head is s cut to at most n bytes, keeping its start and marking the cut.
func Head(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= len(cutEnd) {
		return wholeStart(s, n)
	}
	return wholeStart(s, n-len(cutEnd)) + cutEnd
}

// Tail is s cut to at most n bytes, keeping its end and marking the cut.
// Trailing blank space (a log's last newline) is dropped first, so that it
// takes no room from the text: a crash says why in its last line.
func Tail(s string, n int) string {
	s = strings.TrimRightFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' })
	if len(s) <= n {
		return s
	}
	if n <= len(cutStart) {
		return wholeEnd(s, n)
	}
	return cutStart + wholeEnd(s, n-len(cutStart))
}

// wholeStart is the longest start of s of at most n bytes that ends on a
// whole character.
func wholeStart(s string, n int) string {
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// wholeEnd is the longest end of s of at most n bytes that starts on a
// whole character.
func wholeEnd(s string, n int) string {
	start := len(s) - max(n, 0)
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return s[start:]
}
