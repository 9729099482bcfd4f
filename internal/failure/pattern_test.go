package failure

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// errStrings reduces errors to "type field" so that tests compare what
// matters and not the wording of details.
func errStrings(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, string(e.Type)+" "+e.Field)
	}
	return out
}

func TestValidatePatterns(t *testing.T) {
	ok := func(p FailurePattern) FailurePattern {
		if p.Code == 0 {
			p.Code = 1000
		}
		if p.Phrase == "" {
			p.Phrase = "Mine"
		}
		return p
	}
	cases := map[string]struct {
		patterns []FailurePattern
		want     []string
	}{
		"none": {nil, nil},
		"every field set": {[]FailurePattern{ok(FailurePattern{
			PodReason: "^Evicted$", PodMessage: "memory", ContainerName: "^main$", ContainerReason: "Error",
			ContainerMessage: "NCCL", ExitCodes: &Range{1, 1}, Signals: &Range{9, 9},
			Attributes: []Attribute{AttributeTransient, AttributeConflict},
		})}, nil},
		"no condition at all is a catch-all": {[]FailurePattern{ok(FailurePattern{})}, nil},
		"bad regexes": {[]FailurePattern{ok(FailurePattern{
			PodReason: "(", PodMessage: "[", ContainerName: "*", ContainerReason: "a{2,1}", ContainerMessage: `\`,
		})}, []string{
			"FieldValueInvalid spec.patterns[0].podReason",
			"FieldValueInvalid spec.patterns[0].podMessage",
			"FieldValueInvalid spec.patterns[0].containerName",
			"FieldValueInvalid spec.patterns[0].containerReason",
			"FieldValueInvalid spec.patterns[0].containerMessage",
		}},
		"empty exit-code range": {[]FailurePattern{ok(FailurePattern{ExitCodes: &Range{2, 1}})},
			[]string{"FieldValueInvalid spec.patterns[0].exitCodes"}},
		"empty signal range": {[]FailurePattern{ok(FailurePattern{Signals: &Range{15, 9}})},
			[]string{"FieldValueInvalid spec.patterns[0].signals"}},
		"signal 0 does not exist": {[]FailurePattern{ok(FailurePattern{Signals: &Range{0, 9}})},
			[]string{"FieldValueInvalid spec.patterns[0].signals"}},
		"signal 65 does not exist": {[]FailurePattern{ok(FailurePattern{Signals: &Range{9, 65}})},
			[]string{"FieldValueInvalid spec.patterns[0].signals"}},
		"reserved codes": {[]FailurePattern{
			{Code: 0, Phrase: "P"}, {Code: -1, Phrase: "P"}, {Code: -1999, Phrase: "P"}, {Code: 200, Phrase: "P"},
			{Code: 219, Phrase: "P"}, {Code: -2000, Phrase: "P"}, {Code: 220, Phrase: "P"}, {Code: 137, Phrase: "P"},
		}, []string{
			"FieldValueInvalid spec.patterns[0].code",
			"FieldValueInvalid spec.patterns[1].code",
			"FieldValueInvalid spec.patterns[2].code",
			"FieldValueInvalid spec.patterns[3].code",
			"FieldValueInvalid spec.patterns[4].code",
		}},
		"phrase required": {[]FailurePattern{{Code: 1000}}, []string{"FieldValueRequired spec.patterns[0].phrase"}},
		"unknown attribute": {[]FailurePattern{ok(FailurePattern{Attributes: []Attribute{"Flaky"}})},
			[]string{"FieldValueNotSupported spec.patterns[0].attributes[0]"}},
		"duplicate attribute": {[]FailurePattern{ok(FailurePattern{Attributes: []Attribute{AttributePermanent, AttributePermanent}})},
			[]string{"FieldValueDuplicate spec.patterns[0].attributes[1]"}},
		"transient and permanent": {[]FailurePattern{ok(FailurePattern{Attributes: []Attribute{AttributeTransient, AttributePermanent}})},
			[]string{"FieldValueInvalid spec.patterns[0].attributes"}},
		"conflict without transient": {[]FailurePattern{ok(FailurePattern{Attributes: []Attribute{AttributeConflict}})},
			[]string{"FieldValueInvalid spec.patterns[0].attributes"}},
		"conflict with permanent": {[]FailurePattern{ok(FailurePattern{Attributes: []Attribute{AttributePermanent, AttributeConflict}})},
			[]string{"FieldValueInvalid spec.patterns[0].attributes"}},
		"errors name the pattern's index": {[]FailurePattern{ok(FailurePattern{}), ok(FailurePattern{PodReason: "("})},
			[]string{"FieldValueInvalid spec.patterns[1].podReason"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := errStrings(ValidatePatterns(tc.patterns, field.NewPath("spec", "patterns")))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ValidatePatterns (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewClassifierRejectsInvalidPatterns(t *testing.T) {
	_, errs := NewClassifier([]FailurePattern{{PodReason: "(", Code: 1000, Phrase: "P"}}, field.NewPath("failurePatterns"))
	if diff := cmp.Diff([]string{"FieldValueInvalid failurePatterns[0].podReason"}, errStrings(errs)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestRangeContains(t *testing.T) {
	cases := map[string]struct {
		r    Range
		v    int32
		want bool
	}{
		"below":     {Range{2, 4}, 1, false},
		"min":       {Range{2, 4}, 2, true},
		"max":       {Range{2, 4}, 4, true},
		"above":     {Range{2, 4}, 5, false},
		"one value": {Range{7, 7}, 7, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.r.Contains(tc.v); got != tc.want {
				t.Errorf("%+v.Contains(%d) = %v, want %v", tc.r, tc.v, got, tc.want)
			}
		})
	}
}
