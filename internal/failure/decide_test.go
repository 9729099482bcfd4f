package failure

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/topology"
	"github.com/muster-dev/muster/internal/testutil"
)

// TestDecide is the whole table of what an ended pod leads to: the first
// matching failure rule, else the role's restart policy, with the class
// deciding whether a restart counts.
func TestDecide(t *testing.T) {
	exit := func(code int32, attrs ...string) musterv1.ExitStatus {
		return musterv1.ExitStatus{Code: code, CompletionCode: code, Attributes: attrs}
	}
	evicted := musterv1.ExitStatus{Reason: "Evicted", CompletionCode: -1000, Attributes: []string{"Transient"}}
	generic := testutil.MakeJob("j", "ns").Role("w", 2).Obj()
	static := testutil.MakeJob("j", "ns").PyTorch().Role("master", 1).Role("worker", 2).Obj()
	elastic := testutil.MakeJob("j", "ns").Role("w", 2).Elastic(1, 4).Obj()
	ruled := testutil.MakeJob("j", "ns").Role("w", 2).
		Rule(musterv1.FailureRule{OnExitCodes: musterv1.ExitCodeMatch{Operator: musterv1.ExitCodeIn, Values: []int32{3}}, Action: musterv1.ActionFailJob}).
		Rule(musterv1.FailureRule{OnClasses: []musterv1.FailureClass{musterv1.ClassTransient}, Action: musterv1.ActionRestartJob}).Obj()
	withPolicy := func(j *musterv1.TrainingJob, p musterv1.RestartPolicy) *musterv1.TrainingJob {
		j = j.DeepCopy()
		for i := range j.Spec.Roles {
			j.Spec.Roles[i].RestartPolicy = p
		}
		return j
	}
	type want struct {
		Action      musterv1.FailureAction
		Rule        int
		Accountable bool
		Reason      musterv1.ConditionReason
	}
	cases := map[string]struct {
		job  *musterv1.TrainingJob
		role int
		end  End
		want want
	}{
		"success":                               {generic, 0, End{Succeeded: true}, want{ActionSucceedTask, -1, false, ""}},
		"success under Always restarts":         {withPolicy(generic, musterv1.RestartPolicyAlways), 0, End{Succeeded: true}, want{musterv1.ActionRestartTask, -1, true, ""}},
		"ExitCode: a code error fails the job":  {generic, 0, End{Exit: exit(1)}, want{ActionFailAttempt, -1, false, musterv1.ReasonPermanentExitCode}},
		"ExitCode: SIGKILL restarts, counted":   {generic, 0, End{Exit: exit(137, "Transient")}, want{musterv1.ActionRestartTask, -1, true, ""}},
		"ExitCode: an eviction is free":         {generic, 0, End{Exit: evicted}, want{musterv1.ActionRestartTask, -1, false, ""}},
		"Never: the task fails":                 {withPolicy(generic, musterv1.RestartPolicyNever), 0, End{Exit: exit(1)}, want{musterv1.ActionFailTask, -1, false, ""}},
		"OnFailure: a permanent failure is not": {withPolicy(generic, musterv1.RestartPolicyOnFailure), 0, End{Exit: exit(127, "Permanent")}, want{musterv1.ActionFailTask, -1, false, ""}},
		"static PyTorch restarts as a gang":     {static, 1, End{Exit: exit(137, "Transient")}, want{musterv1.ActionRestartJob, -1, true, ""}},
		"an elastic role restarts its pod":      {withPolicy(elastic, musterv1.RestartPolicyOnFailure), 0, End{Exit: exit(1)}, want{musterv1.ActionRestartTask, -1, true, ""}},
		"a rule on the exit code":               {ruled, 0, End{Exit: exit(3)}, want{musterv1.ActionFailJob, 0, true, musterv1.ReasonPolicyFailed}},
		"a rule on the class":                   {ruled, 0, End{Exit: evicted}, want{musterv1.ActionRestartJob, 1, false, ""}},
		"a vanished pod is an eviction":         {ruled, 0, End{Vanished: true, Exit: musterv1.ExitStatus{CompletionCode: -101, Attributes: []string{"Transient"}}}, want{musterv1.ActionRestartJob, 1, false, ""}},
		"no rule matches: the restart policy":   {ruled, 0, End{Exit: exit(2)}, want{ActionFailAttempt, -1, false, musterv1.ReasonPermanentExitCode}},
		"rules never see a success":             {ruled, 0, End{Succeeded: true}, want{ActionSucceedTask, -1, false, ""}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := topology.Effective(tc.job)
			r := &job.Spec.Roles[tc.role]
			d := Decide(PolicyOf(job), RoleOf(r), tc.end)
			if diff := cmp.Diff(tc.want, want{d.Action, d.Rule, d.Accountable, d.Reason}); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}
