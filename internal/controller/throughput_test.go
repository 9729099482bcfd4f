package controller

import (
	"regexp"
	"strings"
	"testing"
)

func TestLastMatch(t *testing.T) {
	re := regexp.MustCompile(`throughput=([0-9.]+)`)
	cases := map[string]struct {
		log  string
		want *float64
	}{
		"the newest line wins": {"event=epoch throughput=10.5\nnoise\n[default0]:event=epoch throughput=12\n", new(12.0)},
		"no match":             {"nothing here\n", nil},
		"unparsable skipped":   {"throughput=1.5\nthroughput=.\n", new(1.5)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := lastMatch(strings.NewReader(tc.log), re)
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Errorf("lastMatch = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestGauge(t *testing.T) {
	text := `# HELP training_samples_per_second samples
# TYPE training_samples_per_second gauge
training_samples_per_second{rank="0"} 120.5
training_samples_per_second{rank="1"} 119.5
training_samples_per_second_total 99
other 3
`
	if v, ok := gauge(strings.NewReader(text), "training_samples_per_second"); !ok || v != 240 {
		t.Errorf("gauge = %v, %v; want 240, true", v, ok)
	}
	if _, ok := gauge(strings.NewReader(text), "missing"); ok {
		t.Error("a missing gauge is not found")
	}
}
