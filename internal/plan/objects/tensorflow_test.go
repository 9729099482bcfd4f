package objects

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

func TestTFConfig(t *testing.T) {
	tf := &musterv1.TensorFlowRuntime{TaskTypes: []musterv1.TensorFlowTaskType{
		{Role: "gpu-worker", Type: musterv1.TFWorker}, {Role: "eval", Type: musterv1.TFEvaluator},
	}}
	job := testutil.MakeJob("tf", "ns").Runtime(musterv1.Runtime{TensorFlow: tf}).
		Role("chief", 1).Role("ps", 2).Role("worker", 2).Role("gpu-worker", 1).Role("eval", 1).Obj()
	cluster := map[string][]string{
		"chief":  {"tf-chief-0.tf:2222"},
		"ps":     {"tf-ps-0.tf:2222", "tf-ps-1.tf:2222"},
		"worker": {"tf-worker-0.tf:2222", "tf-worker-1.tf:2222", "tf-gpu-worker-0.tf:2222"},
	}
	all := []string{"tf-chief-0.tf", "tf-ps-0.tf", "tf-ps-1.tf", "tf-worker-0.tf", "tf-worker-1.tf", "tf-gpu-worker-0.tf"}
	cases := map[string]struct {
		role      string
		index     int32
		wantType  string
		wantIndex int32
	}{
		"chief":     {"chief", 0, "chief", 0},
		"second ps": {"ps", 1, "ps", 1},
		"worker":    {"worker", 1, "worker", 1},
		"a second worker role continues the list": {"gpu-worker", 0, "worker", 2},
		"evaluator": {"eval", 0, "evaluator", 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := podOf(t, job, tc.role, tc.index)
			var got tfConfig
			if err := json.Unmarshal([]byte(testutil.Env(pod.Spec.Containers[0])["TF_CONFIG"]), &got); err != nil {
				t.Fatal(err)
			}
			want := tfConfig{Cluster: cluster, Task: tfTask{Type: tc.wantType, Index: tc.wantIndex}, Environment: "cloud"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("TF_CONFIG (-want +got):\n%s", diff)
			}
			var wantWait []string
			if tc.wantType != "evaluator" {
				wantWait = except(all, PodDNSName(job, tc.role, tc.index))
			}
			if diff := cmp.Diff(wantWait, waitedFor(pod)); diff != "" {
				t.Errorf("waits for (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTFConfigPortAndSizes(t *testing.T) {
	for _, n := range []int32{1, 3, 8} {
		job := testutil.MakeJob("tf", "ns").Runtime(musterv1.Runtime{TensorFlow: &musterv1.TensorFlowRuntime{Port: 5000}}).Role("worker", n).Obj()
		for i := range n {
			var got tfConfig
			if err := json.Unmarshal([]byte(testutil.Env(podOf(t, job, "worker", i).Spec.Containers[0])["TF_CONFIG"]), &got); err != nil {
				t.Fatal(err)
			}
			if len(got.Cluster["worker"]) != int(n) || got.Cluster["worker"][i] != PodDNSName(job, "worker", i)+":5000" || got.Task.Index != i {
				t.Errorf("size %d task %d: %+v", n, i, got)
			}
		}
	}
}
