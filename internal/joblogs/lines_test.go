package joblogs

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

// A line longer than the bound (a progress bar redrawn with \r, never
// ended) is cut, between characters, and the lines after it still come;
// a last line without its newline comes too.
func TestEachLineCutsALongLineAndGoesOn(t *testing.T) {
	bar := strings.Repeat("█▌ 42%\r", maxLineBytes/8)
	in := "first\r\n" + bar + "\nafter the bar\nlast"
	for name, r := range map[string]io.Reader{
		"whole":       strings.NewReader(in),
		"byte a time": iotest.OneByteReader(strings.NewReader(in)),
	} {
		var got []string
		if err := eachLine(r, func(s string) { got = append(got, s) }); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(got) != 4 || got[0] != "first" || got[2] != "after the bar" || got[3] != "last" {
			t.Fatalf("%s: %d lines, %q ... %q", name, len(got), got[0], got[len(got)-1])
		}
		if cut := got[1]; len(cut) > maxLineBytes || !utf8.ValidString(cut) || !strings.HasSuffix(cut, "...") || !strings.HasPrefix(cut, "█▌ 42%") {
			t.Fatalf("%s: the bar's line is %d bytes, valid UTF-8 %v, ends %q", name, len(cut), utf8.ValidString(cut), cut[len(cut)-8:])
		}
	}
}
