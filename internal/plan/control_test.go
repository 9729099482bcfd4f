package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
	"github.com/muster-dev/muster/internal/testutil"
)

func TestDebugReplacesCommands(t *testing.T) {
	withInit := func(p *corev1.PodTemplateSpec) {
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox"}}
		p.Spec.Containers[0].Args = []string{"--lr=0.1"}
	}
	cases := map[string]struct {
		debug       musterv1.DebugPolicy
		role        string
		wantCommand []string
		wantInit    int
	}{
		"default is sleep inf":        {debug: musterv1.DebugPolicy{}, role: "worker", wantCommand: []string{"sleep", "inf"}, wantInit: 1},
		"job-wide command, skip init": {debug: musterv1.DebugPolicy{Command: []string{"bash"}, SkipInitContainers: new(true)}, role: "worker", wantCommand: []string{"bash"}},
		"the role's own settings win": {
			debug: musterv1.DebugPolicy{Command: []string{"bash"}, Roles: []musterv1.RoleDebug{{Name: "master", Command: []string{"sleep", "600"}, SkipInitContainers: new(true)}}},
			role:  "master", wantCommand: []string{"sleep", "600"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := testutil.MakeJob("j", "ns").Role("master", 1).Template(withInit).Role("worker", 1).Template(withInit).Debug(tc.debug).Obj()
			idx := 0
			if tc.role == "worker" {
				idx = 1
			}
			pod, err := DesiredPod(job, &job.Spec.Roles[idx], 0, 1)
			if err != nil {
				t.Fatal(err)
			}
			c := pod.Spec.Containers[0]
			if diff := cmp.Diff(tc.wantCommand, c.Command); diff != "" || c.Args != nil {
				t.Errorf("command (-want +got):\n%s args %v", diff, c.Args)
			}
			if len(pod.Spec.InitContainers) != tc.wantInit {
				t.Errorf("init containers = %d, want %d", len(pod.Spec.InitContainers), tc.wantInit)
			}
		})
	}
}

func TestDependsOnHoldsRoleBack(t *testing.T) {
	w := newWorld(t, testutil.MakeJob("j", "ns").UID("j").
		Role("master", 1).Role("worker", 2).DependsOn("master", musterv1.DependencyRunning).WithDefaults().Obj())
	res := w.step()
	if len(res.CreatePods) != 1 || res.CreatePods[0].Name != "j-master-0" {
		t.Fatalf("only the master starts first, got %d creates", len(res.CreatePods))
	}
	c := w.job.Status.Condition(musterv1.ConditionRunning)
	if c == nil || c.Reason != musterv1.ReasonWaitingForRoles || c.Message != "role worker waits for role master to be Running" {
		t.Fatalf("Running condition = %+v", c)
	}
	w.step()
	if len(w.pods) != 1 {
		t.Fatalf("workers wait while the master is pending: %d pods", len(w.pods))
	}
	w.setPhase("j-master-0", corev1.PodRunning)
	if res = w.step(); len(res.CreatePods) != 2 {
		t.Fatalf("workers start once the master runs, got %d creates", len(res.CreatePods))
	}
}

func TestExecutionCreateHoldsAndStopEnds(t *testing.T) {
	w := newWorld(t, testutil.MakeJob("j", "ns").UID("j").Role("w", 2).Execution(musterv1.ExecutionCreate).WithDefaults().Obj())
	res := w.step()
	if len(res.CreatePods) != 0 || res.CreateService != nil {
		t.Fatal("a held job creates nothing")
	}
	if w.job.Status.IsTrue(musterv1.ConditionCreated) {
		t.Fatal("Created must be False while held")
	}
	w.job.Spec.Run.Execution = musterv1.ExecutionStart
	w.runAll()
	w.job.Spec.Run.Execution = musterv1.ExecutionStop
	res = w.step()
	if w.job.Status.Phase != musterv1.PhaseFailed || w.job.Status.Completion.Reason != musterv1.ReasonStopped {
		t.Fatalf("phase %s completion %+v", w.job.Status.Phase, w.job.Status.Completion)
	}
	if len(res.DeletePods) != 2 || len(w.pods) != 0 {
		t.Fatalf("a stopped job's running pods are deleted: %d deletes, %d left", len(res.DeletePods), len(w.pods))
	}
}
