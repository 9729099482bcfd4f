package text

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestHead(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"a longer message", 10, "a longe..."},
		{"ééééé", 6, "é..."}, // 10 bytes; 3 left for text: one é (2 bytes), not half of the next
		{"abcdef", 2, "ab"},
		{"éé", 3, "é"},
		{"", 0, ""},
	}
	for _, tc := range cases {
		if got := Head(tc.in, tc.n); got != tc.want {
			t.Errorf("Head(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestTail(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"short\n", 10, "short"},
		{"Traceback ...\nValueError: bad\n", 18, "…ValueError: bad"},
		{"ééééé", 7, "…éé"}, // 3 bytes for the mark, 4 for text
		{"ééééé", 6, "…é"},  // 3 for text: one é, not half of another
		{"abcdef", 2, "ef"},
	}
	for _, tc := range cases {
		if got := Tail(tc.in, tc.n); got != tc.want {
			t.Errorf("Tail(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// At every limit, a cut of any of these fits the limit and is valid UTF-8:
// multi-byte characters of every width, at every offset.
func TestCutsFitAndStayWhole(t *testing.T) {
	inputs := []string{"a longer message", strings.Repeat("日本", 20), "aé日𝄞" + strings.Repeat("é𝄞", 9), "x\n\n"}
	for _, s := range inputs {
		for n := 0; n <= len(s)+2; n++ {
			for name, got := range map[string]string{"Head": Head(s, n), "Tail": Tail(s, n)} {
				if len(got) > n || !utf8.ValidString(got) {
					t.Fatalf("%s(%q, %d) = %q: over the limit or not UTF-8", name, s, n, got)
				}
			}
		}
	}
}
