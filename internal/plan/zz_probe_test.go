package plan

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
	"github.com/muster-dev/muster/internal/testutil"
)

func TestProbeReplace(t *testing.T) {
	now := time.Now()
	job := testutil.MakeJob("j", "ns").UID("u").Role("worker", 2).RestartPolicy(musterv1.RestartPolicyOnFailure).WithDefaults().Obj()
	show := func(label string, pods []*corev1.Pod) {
		res := Plan(Input{Job: job, Pods: pods, HasService: true, Now: now})
		b, _ := json.Marshal(res.Status)
		t.Logf("%s: creates=%d release=%v deletes=%v changed=%v\n%s", label, len(res.CreatePods), res.ReleasePods, res.DeletePods, string(mustJSON(job.Status)) != string(b), b)
		job.Status = res.Status
		now = now.Add(time.Second)
	}
	var pods []*corev1.Pod
	for i := range int32(2) {
		p := testutil.MakePod(job, "worker", i).Running().Obj()
		p.Finalizers = []string{musterv1.FinalizerTracking}
		p.UID = types.UID("p" + p.Name)
		pods = append(pods, p)
	}
	show("running", pods)
	show("running", pods)
	pods[0].DeletionTimestamp = &metav1.Time{Time: now}
	pods[0].DeletionGracePeriodSeconds = new(int64(0))
	show("deleting", pods)
	show("gone", pods[1:])
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }
