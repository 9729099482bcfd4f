package importer

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

func TestFCTaskRestart(t *testing.T) {
	cases := []struct {
		pod    string
		retry  fcRetry
		want   musterv1.RestartPolicy
		capped bool
	}{
		{"", fcRetry{max: 3}, musterv1.RestartPolicyAlways, false}, // the kubelet's default restarts in place
		{"OnFailure", fcRetry{}, musterv1.RestartPolicyOnFailure, false},
		{"Never", fcRetry{max: -2}, musterv1.RestartPolicyAlways, false},
		{"Never", fcRetry{max: -1}, musterv1.RestartPolicyOnFailure, false},
		{"Never", fcRetry{max: 0}, musterv1.RestartPolicyNever, false},
		{"Never", fcRetry{fancy: true, max: 0}, musterv1.RestartPolicyOnFailure, true},
		{"Never", fcRetry{max: 2}, musterv1.RestartPolicyOnFailure, true},
	}
	for _, c := range cases {
		got, capped := fcTaskRestart(c.pod, c.retry)
		if got != c.want || capped != c.capped {
			t.Errorf("fcTaskRestart(%q, %+v) = %s, %v; want %s, %v", c.pod, c.retry, got, capped, c.want, c.capped)
		}
	}
}

func TestFCJobRetry(t *testing.T) {
	cases := []struct {
		in   fcRetry
		want *musterv1.RetryPolicy
		why  string // what the report says, if anything
	}{
		{in: fcRetry{max: -2}, want: &musterv1.RetryPolicy{Policy: musterv1.RetryAlways}},
		{in: fcRetry{max: -1}, want: &musterv1.RetryPolicy{Policy: musterv1.RetryOnFailure}},
		{in: fcRetry{max: 0}, want: nil},
		// Transient failures are still retried, without counting.
		{in: fcRetry{fancy: true, max: 0}, want: &musterv1.RetryPolicy{Policy: musterv1.RetryOnTransientFailure}},
		{in: fcRetry{fancy: true, max: 3}, want: &musterv1.RetryPolicy{Policy: musterv1.RetryOnFailure},
			why: "failurePolicy.backoffLimit 10000, the one budget of every restart, bounds them (their own limit: 3)"},
		{in: fcRetry{max: 2}, want: &musterv1.RetryPolicy{Policy: musterv1.RetryOnFailure}, why: "(their own limit: 2)"},
	}
	for _, c := range cases {
		got, why := fcJobRetry(c.in, unlimited)
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("fcJobRetry(%+v) (-want +got):\n%s", c.in, diff)
		}
		if (c.why == "") != (why == "") || !strings.Contains(why, c.why) {
			t.Errorf("fcJobRetry(%+v): why %q, want it to say %q", c.in, why, c.why)
		}
	}
}

func TestVolcanoRule(t *testing.T) {
	cases := map[string]struct {
		in   vcPolicy
		want *musterv1.FailureRule
		why  string
	}{
		"a task's completion": {in: vcPolicy{events: []string{"TaskCompleted"}, action: "CompleteJob", role: "trainer"},
			want: &musterv1.FailureRule{Action: musterv1.ActionCompleteJob, Roles: []string{"trainer"}, OnEvents: []musterv1.FailureEvent{musterv1.EventTaskCompleted}}},
		"an exit code": {in: vcPolicy{exitCode: ptr(int32(3)), action: "RestartPod"},
			want: &musterv1.FailureRule{Action: musterv1.ActionRestartTask, OnEvents: []musterv1.FailureEvent{musterv1.EventPodFailed},
				OnExitCodes: musterv1.ExitCodeMatch{Operator: musterv1.ExitCodeIn, Values: []int32{3}}}},
		"pending with a timeout": {in: vcPolicy{events: []string{"PodPending"}, timeout: "90s", action: "RestartTask", role: "w"},
			want: &musterv1.FailureRule{Action: musterv1.ActionRestartRole, Roles: []string{"w"}, OnEvents: []musterv1.FailureEvent{musterv1.EventPodPending}, TimeoutSeconds: 90}},
		"pending without one": {in: vcPolicy{events: []string{"PodPending"}, action: "RestartJob"}, why: "PodPending needs a timeout"},
		"unknown is job-wide": {in: vcPolicy{events: []string{"Unknown"}, action: "RestartJob", role: "w"},
			want: &musterv1.FailureRule{Action: musterv1.ActionRestartJob, OnEvents: []musterv1.FailureEvent{musterv1.EventPartlyPlaced}},
			why:  "event of the whole job"},
		"any event, one pod": {in: vcPolicy{events: []string{"*"}, action: "RestartPod"},
			want: &musterv1.FailureRule{Action: musterv1.ActionRestartTask, OnEvents: []musterv1.FailureEvent{musterv1.EventPodFailed, musterv1.EventPodEvicted}},
			why:  "* is written out"},
		"terminate is a final failure": {in: vcPolicy{events: []string{"PodFailed"}, action: "TerminateJob"},
			want: &musterv1.FailureRule{Action: musterv1.ActionFailJob, OnEvents: []musterv1.FailureEvent{musterv1.EventPodFailed}}},
		"abort is suspend": {in: vcPolicy{events: []string{"PodEvicted"}, action: "AbortJob"},
			want: &musterv1.FailureRule{Action: musterv1.ActionSuspendJob, OnEvents: []musterv1.FailureEvent{musterv1.EventPodEvicted}}},
		"a delayed failure": {in: vcPolicy{events: []string{"PodFailed"}, action: "RestartJob", timeout: "1m"},
			want: &musterv1.FailureRule{Action: musterv1.ActionRestartJob, OnEvents: []musterv1.FailureEvent{musterv1.EventPodFailed}},
			why:  "Muster acts at once"},
		"no such action": {in: vcPolicy{events: []string{"PodFailed"}, action: "RestartPartition"}, why: "no Muster equivalent"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, why := volcanoRule(c.in)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("rule (-want +got):\n%s", diff)
			}
			if joined := strings.Join(why, "; "); (c.why == "") != (joined == "") || !strings.Contains(joined, c.why) {
				t.Errorf("why %q, want it to say %q", joined, c.why)
			}
		})
	}
}

func TestTorchRendezvous(t *testing.T) {
	got, err := torchRendezvous(rendezvous{backend: "etcd-v2", endpoint: "etcd:2379"})
	want := musterv1.Rendezvous{Backend: "etcd-v2", Store: musterv1.StoreExternal, Endpoint: "etcd:2379"}
	if err != nil || got != want {
		t.Errorf("got %+v, %v; want %+v", got, err, want)
	}
	if got, err := torchRendezvous(rendezvous{port: ptr(int32(29500))}); err != nil || got != (musterv1.Rendezvous{Port: 29500}) {
		t.Errorf("a port without a host: got %+v, %v", got, err)
	}
	if _, err := torchRendezvous(rendezvous{backend: "etcd"}); err == nil || !strings.Contains(err.Error(), "needs an endpoint") {
		t.Errorf("etcd without an endpoint: %v", err)
	}
	if _, err := torchRendezvous(rendezvous{backend: "zookeeper"}); err == nil {
		t.Error("an unknown backend was accepted")
	}
}

func TestT9kExtraOptions(t *testing.T) {
	unknown, env, endpoint := t9kExtraOptions([]string{"--monitor-interval=2", "--log-dir", "/logs", "--no-python", "--rdzv-endpoint=etcd:2379", "stray"})
	if endpoint != "etcd:2379" {
		t.Errorf("endpoint %q", endpoint)
	}
	if diff := cmp.Diff([]string{"stray"}, unknown); diff != "" {
		t.Errorf("unknown (-want +got):\n%s", diff)
	}
	var got []string
	for _, e := range env {
		got = append(got, e.Name+"="+e.Value)
	}
	if diff := cmp.Diff([]string{"PET_MONITOR_INTERVAL=2", "PET_LOG_DIR=/logs", "PET_NO_PYTHON=1"}, got); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
}

// Whatever no converter reads is reported, a whole subtree at once when
// nothing in it was read.
func TestLeftovers(t *testing.T) {
	docs, err := Parse("in", strings.NewReader(`
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: j}
spec:
  brandNew: {a: 1, b: [2]}
  tasks:
  - name: w
    replicas: 1
    surprise: true
    template: {spec: {containers: [{name: c, image: busybox}]}}
`))
	if err != nil {
		t.Fatal(err)
	}
	results, err := Convert(docs)
	if err != nil {
		t.Fatal(err)
	}
	want := []Dropped{
		{Path: "spec.brandNew", Reason: "no TrainingJob field carries it"},
		{Path: "spec.tasks[0].surprise", Reason: "no TrainingJob field carries it"},
	}
	if diff := cmp.Diff(want, results[0].Dropped); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}
}

func TestPaths(t *testing.T) {
	p := path{"metadata", "annotations", "kubedl.io/x"}
	if got := p.String(); got != `metadata.annotations["kubedl.io/x"]` {
		t.Errorf("got %s", got)
	}
	if got := (path{"spec", "tasks", 2, "name"}).String(); got != "spec.tasks[2].name" {
		t.Errorf("got %s", got)
	}
}

func TestErrors(t *testing.T) {
	cases := map[string]string{
		"apiVersion: batch.volcano.sh/v1beta9\nkind: Job\nmetadata: {name: j}\n":                                                                                                   `muster import reads batch.volcano.sh/v1alpha1`,
		"apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {}\nspec: {}\n":                                                                                               "metadata.name is required",
		"apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: 1j}\nspec: {tasks: [{name: w, replicas: 1, template: {spec: {containers: [{name: c, image: b}]}}}]}\n": "must be a DNS-1035 label",
		"apiVersion: frameworkcontroller.microsoft.com/v1\nkind: Framework\nmetadata: {name: f}\nspec: {executionType: Go}\n":                                                      `spec.executionType: "Go": Create, Start or Stop`,
	}
	for in, want := range cases {
		docs, err := Parse("in", strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Convert(docs); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", in, err, want)
		}
	}
}

func TestRestartScope(t *testing.T) {
	elastic := &musterv1.Runtime{PyTorch: &musterv1.PyTorchRuntime{Elastic: &musterv1.ElasticPolicy{}}}
	scaling := musterv1.Scaling{Roles: []musterv1.ScalingRole{{Name: "worker"}}}
	cases := map[string]struct {
		spec musterv1.TrainingJobSpec
		role string
		want musterv1.RestartScope
	}{
		"an elastic role":                {spec: musterv1.TrainingJobSpec{Runtime: elastic, Scaling: scaling}, role: "worker", want: musterv1.RestartScopeTask},
		"a fixed role of an elastic job": {spec: musterv1.TrainingJobSpec{Runtime: elastic, Scaling: scaling}, role: "init", want: musterv1.RestartScopeJob},
		"a static PyTorch world":         {spec: musterv1.TrainingJobSpec{Runtime: &musterv1.Runtime{PyTorch: &musterv1.PyTorchRuntime{}}}, role: "worker", want: musterv1.RestartScopeJob},
		"MPI without a gang": {spec: musterv1.TrainingJobSpec{Runtime: &musterv1.Runtime{MPI: &musterv1.MPIRuntime{}},
			Scheduling: musterv1.Scheduling{Backend: musterv1.GangNone}}, role: "worker", want: musterv1.RestartScopeJob},
		"independent tasks": {spec: musterv1.TrainingJobSpec{}, role: "worker", want: musterv1.RestartScopeTask},
		"a Volcano Job's wiring without a gang": {spec: musterv1.TrainingJobSpec{Runtime: &musterv1.Runtime{VolcanoJob: &musterv1.VolcanoJobRuntime{}},
			Scheduling: musterv1.Scheduling{Backend: musterv1.GangNone}}, role: "worker", want: musterv1.RestartScopeTask},
		"a Volcano Job's wiring in a gang": {spec: musterv1.TrainingJobSpec{Runtime: &musterv1.Runtime{VolcanoJob: &musterv1.VolcanoJobRuntime{}},
			Scheduling: musterv1.Scheduling{Backend: musterv1.GangVolcano}}, role: "worker", want: musterv1.RestartScopeJob},
		"a gang": {spec: musterv1.TrainingJobSpec{Scheduling: musterv1.Scheduling{Backend: musterv1.GangCoscheduling}}, role: "worker", want: musterv1.RestartScopeJob},
	}
	for name, c := range cases {
		if got := c.spec.ShapeRestartScope(c.role); got != c.want {
			t.Errorf("%s: %s, want %s", name, got, c.want)
		}
	}
}
