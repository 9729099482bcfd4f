package failure

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCompletionPredicates(t *testing.T) {
	type got struct{ Failed, Unknown, Transient, Conflict bool }
	cases := map[string]struct {
		c    Completion
		want got
	}{
		"success": {Completion{Type: CompletionSucceeded}, got{}},
		"zero value is a failure, so it is never taken for success": {Completion{}, got{Failed: true, Unknown: true}},
		"unknown failure":    {failed("X"), got{Failed: true, Unknown: true}},
		"transient":          {failed("X", AttributeTransient), got{Failed: true, Transient: true}},
		"transient conflict": {failed("X", AttributeConflict, AttributeTransient), got{Failed: true, Transient: true, Conflict: true}},
		"permanent":          {failed("X", AttributePermanent), got{Failed: true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := got{tc.c.Failed(), tc.c.Unknown(), tc.c.Has(AttributeTransient), tc.c.Has(AttributeConflict)}
			if diff := cmp.Diff(tc.want, g); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestSortAttributes(t *testing.T) {
	cases := map[string]struct {
		in, want []Attribute
	}{
		"none":                   {nil, nil},
		"canonical order":        {[]Attribute{AttributeConflict, AttributeTransient}, []Attribute{AttributeTransient, AttributeConflict}},
		"duplicates dropped":     {[]Attribute{AttributePermanent, AttributePermanent}, []Attribute{AttributePermanent}},
		"unknown values dropped": {[]Attribute{"Flaky", AttributeTransient}, []Attribute{AttributeTransient}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, sortAttributes(tc.in)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
