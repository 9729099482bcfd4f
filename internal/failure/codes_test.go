package failure

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestIsReservedCode(t *testing.T) {
	cases := map[string]struct {
		code int32
		want bool
	}{
		"success":                  {0, true},
		"operator outcome":         {-210, true},
		"default table":            {-1203, true},
		"lowest reserved":          {-1999, true},
		"below the reserved range": {-2000, false},
		"exit 1":                   {1, false},
		"signal code":              {137, false},
		"container contract low":   {200, true},
		"container contract high":  {219, true},
		"above the contract":       {220, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := IsReservedCode(tc.code); got != tc.want {
				t.Errorf("IsReservedCode(%d) = %v, want %v", tc.code, got, tc.want)
			}
		})
	}
}

func TestPredefined(t *testing.T) {
	cases := map[string]struct {
		code   int32
		want   Completion
		wantOK bool
	}{
		"success": {0, Completion{Code: 0, Phrase: "Succeeded", Type: CompletionSucceeded, Diagnostics: "d"}, true},
		"stop": {CodeStopRequested, Completion{Code: -210, Phrase: "StopRequested", Type: CompletionFailed,
			Attributes: []Attribute{AttributePermanent}, Diagnostics: "d"}, true},
		"pod deleted externally": {CodePodDeletedExternally, Completion{Code: -101, Phrase: "PodDeletedExternally",
			Type: CompletionFailed, Attributes: []Attribute{AttributeTransient}, Diagnostics: "d"}, true},
		"container contract 201": {201, Completion{Code: 201, Phrase: "ContainerTransientConflictFailed", Type: CompletionFailed,
			Attributes: []Attribute{AttributeTransient, AttributeConflict}, Diagnostics: "d"}, true},
		"no failed container is unknown": {CodePodFailedWithoutFailedContainer, Completion{Code: -300,
			Phrase: "PodFailedWithoutFailedContainer", Type: CompletionFailed, Diagnostics: "d"}, true},
		"a default-table code is not predefined": {CodePodEvicted, Completion{}, false},
		"an exit code is not predefined":         {1, Completion{}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := Predefined(tc.code, "d")
			if ok != tc.wantOK {
				t.Fatalf("Predefined(%d) ok = %v, want %v", tc.code, ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Predefined(%d) (-want +got):\n%s", tc.code, diff)
			}
		})
	}
}

// TestPredefinedReturnsCopies guards the package's tables: a caller that
// edits a returned completion must not change the next one.
func TestPredefinedReturnsCopies(t *testing.T) {
	c, _ := Predefined(CodeStopRequested, "")
	c.Attributes[0] = AttributeTransient
	again, _ := Predefined(CodeStopRequested, "")
	if diff := cmp.Diff([]Attribute{AttributePermanent}, again.Attributes); diff != "" {
		t.Errorf("table changed (-want +got):\n%s", diff)
	}
}
