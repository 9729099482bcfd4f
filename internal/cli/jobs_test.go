package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
	"github.com/muster-dev/muster/internal/testutil"
)

func TestPrintJobs(t *testing.T) {
	now := time.Unix(10000, 0)
	job := testutil.MakeJob("pet", "team").Role("worker", 2).Obj()
	job.CreationTimestamp = metav1.NewTime(now.Add(-90 * time.Second))
	job.Status = musterv1.TrainingJobStatus{Phase: musterv1.PhaseRunning, Ready: "2/2", Restarts: musterv1.RestartCounts{Total: 1}}
	var out bytes.Buffer
	printJobs(&out, []musterv1.TrainingJob{*job}, true, now)
	want := "NAMESPACE  NAME  PHASE    READY  RESTARTS  AGE\nteam       pet   Running  2/2    1         90s\n"
	if out.String() != want {
		t.Errorf("got\n%q\nwant\n%q", out.String(), want)
	}
}

func TestDescribeJobShowsTasks(t *testing.T) {
	job := testutil.MakeJob("pet", "team").Role("worker", 1).Obj()
	job.Status.Roles = []musterv1.RoleStatus{{Name: "worker", Tasks: []musterv1.TaskStatus{{
		Index: 0, State: musterv1.TaskRestarting, Pod: "pet-worker-0", Attempts: 2, Restarts: 1,
		LastExit: &musterv1.ExitStatus{Code: 137, Reason: "OOMKilled"},
	}, {Index: 1, Count: 99, State: musterv1.TaskRunning, Attempts: 1}}}}
	var out bytes.Buffer
	describeJob(&out, job)
	if !strings.Contains(out.String(), "worker  0      Restarting  pet-worker-0  2         1         code 137, OOMKilled") {
		t.Errorf("task line missing:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "worker  1-99   Running     -             1         0         -") {
		t.Errorf("tasks alike show as a range:\n%s", out.String())
	}
}

func TestScaleTarget(t *testing.T) {
	elastic := testutil.MakeJob("e", "ns").Role("launcher", 1).Role("worker", 4).Elastic(2, 4).Obj()
	finished := elastic.DeepCopy()
	finished.Status.Phase = musterv1.PhaseSucceeded
	finished.Status.Conditions = []metav1.Condition{{Type: string(musterv1.ConditionSucceeded), Status: metav1.ConditionTrue}}
	cases := map[string]struct {
		job      *musterv1.TrainingJob
		role     string
		replicas int32
		want     int
		wantErr  string
	}{
		"the scalable roles by default": {job: elastic, replicas: 3, want: -1},
		"below the range":               {job: elastic, replicas: 1, wantErr: "--replicas 1 is out of range: its scalable roles [worker] take 2 to 4"},
		"above the range":               {job: elastic, replicas: 5, wantErr: "out of range"},
		"a named role":                  {job: elastic, role: "launcher", replicas: 2, want: 0},
		"a scalable role named":         {job: elastic, role: "worker", replicas: 2, wantErr: "role worker is scalable"},
		"an unknown role":               {job: elastic, role: "ps", wantErr: `no role "ps"`},
		"the only role":                 {job: testutil.MakeJob("j", "ns").Role("w", 2).Obj(), replicas: 3, want: 0},
		"several roles, none named":     {job: testutil.MakeJob("j", "ns").Role("a", 1).Role("b", 1).Obj(), wantErr: "name one with --role"},
		"a finished job":                {job: finished, replicas: 3, wantErr: "has finished (Succeeded)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := scaleTarget(tc.job, tc.role, tc.replicas)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("scaleTarget = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

// With no kubeconfig at all, the error says how to point muster at a
// cluster, not client-go's KUBERNETES_MASTER.
func TestNoClusterSaysWhatToDo(t *testing.T) {
	t.Setenv("KUBECONFIG", t.TempDir()+"/none")
	t.Setenv("HOME", t.TempDir())
	_, _, err := (&clientFlags{}).restConfig()
	if err == nil || !strings.Contains(err.Error(), "--kubeconfig") || strings.Contains(err.Error(), "KUBERNETES_MASTER") {
		t.Fatalf("got %v", err)
	}
}
