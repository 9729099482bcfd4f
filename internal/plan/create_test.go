package plan

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

// What a create the API server refused leads to: the job fails when the
// pod could never be made, and says why it cannot run, and tries again,
// when something else stands in the way. Never a silent loop.
func TestRefusedCreates(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "j-w-0",
		field.ErrorList{field.Invalid(field.NewPath("spec", "containers").Index(0).Child("ports").Index(0).Child("containerPort"), 70000, "must be between 1 and 65535")})
	cases := map[string]struct {
		failure    CreateFailure
		wantPhase  musterv1.JobPhase
		wantReason string
		wantText   string
	}{
		"an invalid pod fails the job": {CreateFailure{Object: "pod j-w-0", Err: invalid}, musterv1.PhaseFailed, string(musterv1.ReasonPodCreateFailed), "containerPort"},
		"a name taken blocks it":       {CreateFailure{Object: "pod j-w-0", NameTaken: true, Err: apierrors.NewAlreadyExists(pods, "j-w-0")}, musterv1.PhasePending, string(musterv1.ReasonNameTaken), "an object Muster does not own has its name"},
		"a refusal blocks it":          {CreateFailure{Object: "pod j-w-0", Err: apierrors.NewForbidden(pods, "j-w-0", errors.New("violates PodSecurity"))}, musterv1.PhasePending, string(musterv1.ReasonPodCreateFailed), "violates PodSecurity"},
		"a passing fault is retried":   {CreateFailure{Object: "pod j-w-0", Err: apierrors.NewServiceUnavailable("busy")}, musterv1.PhasePending, string(musterv1.ReasonPodsPending), ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, testutil.MakeJob("j", "ns").UID("j").Role("w", 2).WithDefaults().Obj())
			w.step()
			delete(w.pods, "j-w-0") // as if its create had been refused
			res := Plan(Input{Job: w.job.DeepCopy(), Pods: w.podList(), HasService: true, Now: w.now, CreateFailures: []CreateFailure{tc.failure}})
			st := res.Status
			if st.Phase != tc.wantPhase {
				t.Fatalf("phase %s, want %s", st.Phase, tc.wantPhase)
			}
			var reason, message string
			if tc.wantPhase == musterv1.PhaseFailed {
				reason, message = string(st.Completion.Reason), st.Completion.Message
			} else {
				c := st.Condition(musterv1.ConditionRunning)
				reason, message = c.Reason, c.Message
			}
			if reason != tc.wantReason || !strings.Contains(message, tc.wantText) {
				t.Fatalf("reason %s message %q", reason, message)
			}
			blocked := tc.wantReason == string(musterv1.ReasonNameTaken) || (tc.wantReason == string(musterv1.ReasonPodCreateFailed) && tc.wantPhase != musterv1.PhaseFailed)
			if blocked && (res.RequeueAfter != createRetry || len(res.Events) == 0 || !res.Events[0].Warning) {
				t.Fatalf("a blocked create warns and is tried again later: requeue %v events %+v", res.RequeueAfter, res.Events)
			}
			if tc.wantPhase == musterv1.PhaseFailed && len(res.CreatePods) != 0 {
				t.Fatal("a failed job creates nothing")
			}
		})
	}
}
