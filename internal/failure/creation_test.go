package failure

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestCreationErrorOf(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	cases := map[string]struct {
		err  error
		want int32
	}{
		"nil":                    {nil, CodePodCreationTransientError},
		"exceeded quota (a 403)": {apierrors.NewForbidden(pods, "p", errors.New("exceeded quota: compute, requested: cpu=4")), CodePodCreationTransientError},
		"unrecognized object": {apierrors.NewBadRequest("the server could not find the requested resource: object provided is unrecognized"),
			CodePodCreationTransientError},
		"bad request": {apierrors.NewBadRequest("nope"), CodePodCreationUnknownError},
		"forbidden":   {apierrors.NewForbidden(pods, "p", errors.New("pod security")), CodePodCreationUnknownError},
		"invalid": {apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p",
			field.ErrorList{field.Required(field.NewPath("spec", "containers"), "")}), CodePodCreationPermanentError},
		"too large":        {apierrors.NewRequestEntityTooLargeError("limit is 3145728"), CodePodCreationPermanentError},
		"connection reset": {errors.New("write tcp 10.0.0.1:443: write: connection reset by peer"), CodePodCreationUnknownError},
		"EOF":              {fmt.Errorf("post pods: %w", io.EOF), CodePodCreationUnknownError},
		"unexpected EOF":   {fmt.Errorf("post pods: %w", io.ErrUnexpectedEOF), CodePodCreationUnknownError},
		"EOF as text":      {errors.New(`Post "https://api/pods": EOF`), CodePodCreationUnknownError},
		"server timeout":   {apierrors.NewServerTimeout(pods, "create", 1), CodePodCreationTransientError},
		"throttled":        {apierrors.NewTooManyRequests("slow down", 1), CodePodCreationTransientError},
		"already exists":   {apierrors.NewAlreadyExists(pods, "p"), CodePodCreationTransientError},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := CreationErrorOf(tc.err)
			want := mustPredefined(tc.want, "")
			want.Diagnostics = got.Diagnostics
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("CreationErrorOf(%v) (-want +got):\n%s", tc.err, diff)
			}
			if tc.err != nil && got.Diagnostics != tc.err.Error() {
				t.Errorf("Diagnostics = %q, want the error text", got.Diagnostics)
			}
		})
	}
}
