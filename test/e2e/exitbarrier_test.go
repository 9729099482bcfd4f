package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
	"github.com/muster-dev/muster/test/framework"
)

// lingerScript: two agents form one world; then the worker in task 1's pod
// lingers while task 0's finishes, so task 0's agent waits in torch's exit
// barrier for an agent that has not finished.
const lingerScript = `
import os, time, torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.ones(1)
dist.all_reduce(t)
dist.destroy_process_group()
pod = os.environ["MUSTER_POD_NAME"]
if pod.endswith("-1"):
    print("lingering", flush=True)
    time.sleep(600)
print("finished", flush=True)
`

// A scale-down that removes an agent as training ends must not leave the
// job sitting in torch's exit barrier (300 s) with nothing training: the
// job's store pod stands in for the agent that is gone, the last agent
// exits, and the job succeeds at once, with a status as clean as an
// uneventful run's: no restart charged, nothing left Restarting, no warning.
func TestScaleDownAsTrainingEndsFinishesPromptly(t *testing.T) {
	hostCPU.exclusive(t)
	g := gomega.NewWithT(t)
	c := cluster.Client
	ns := cluster.Namespace(t, g)
	ctx := context.Background()
	_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "linger"}, Data: map[string]string{"train.py": lingerScript},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())

	job := testutil.MakeJob("linger", ns).Role("worker", 2).Elastic(1, 2).RestartPolicy(musterv1.RestartPolicyOnFailure).
		Template(torchrun("linger", "/opt/train/train.py")).Obj()
	g.Expect(c.Create(ctx, job)).To(gomega.Succeed())
	waitForLog(g, ns, "linger-worker-0", "finished")
	waitForLog(g, ns, "linger-worker-1", "lingering")

	g.Expect(c.Patch(ctx, job, client.RawPatch(client.Merge.Type(), []byte(`{"spec":{"scaling":{"replicas":1}}}`)))).To(gomega.Succeed())
	scaled := time.Now()
	// Torch's own wait would take 300 s; the store notices a dead agent
	// after its heartbeat has stood still for 20 s.
	got := &musterv1.TrainingJob{}
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(job), got)).To(gomega.Succeed())
		g.Expect(got.Status.Phase).To(gomega.Equal(musterv1.PhaseSucceeded))
	}, 120*time.Second, time.Second).Should(gomega.Succeed(), "the job ends once its last agent is released")
	t.Logf("succeeded %s after the scale-down", time.Since(scaled).Round(time.Second))
	expectCleanFinish(g, got)
	expectNoWarnings(g, ns)
}

// torchrun runs script from the ConfigMap cm under torchrun on the host's
// torch.
func torchrun(cm, script string) func(*corev1.PodTemplateSpec) {
	return func(p *corev1.PodTemplateSpec) {
		p.Spec.TerminationGracePeriodSeconds = new(int64(5))
		ctr := &p.Spec.Containers[0]
		ctr.Image = image
		ctr.Command = []string{"torchrun", script}
		ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: "code", MountPath: "/opt/train"})
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "code", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}},
		}})
	}
}

// waitForLog waits until a pod's log has a line containing want.
func waitForLog(g gomega.Gomega, ns, pod, want string) {
	g.Eventually(func() error {
		out, err := framework.PodLog(cs, ns, pod, "main")
		if err != nil {
			return err
		}
		if !strings.Contains(out, want) {
			return fmt.Errorf("%s has not printed %q yet", pod, want)
		}
		return nil
	}, jobTimeout, time.Second).Should(gomega.Succeed())
}

// expectCleanFinish checks that a job that ended well says so consistently:
// no restart charged, no task or condition left restarting.
func expectCleanFinish(g gomega.Gomega, job *musterv1.TrainingJob) {
	g.Expect(job.Status.Restarts.Total).To(gomega.BeZero(), "restarts %+v", job.Status.Restarts)
	g.Expect(apimeta.IsStatusConditionTrue(job.Status.Conditions, string(musterv1.ConditionRestarting))).To(gomega.BeFalse(),
		"conditions %+v", job.Status.Conditions)
	for _, r := range job.Status.Roles {
		for _, ts := range r.Tasks {
			g.Expect(ts.State).NotTo(gomega.Equal(musterv1.TaskRestarting), "role %s: %+v", r.Name, ts)
		}
	}
}

// expectNoWarnings checks that nothing in the namespace had a warning.
func expectNoWarnings(g gomega.Gomega, ns string) {
	evs, err := cs.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "type=Warning"})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var warnings []string
	for _, e := range evs.Items {
		warnings = append(warnings, fmt.Sprintf("%s %s/%s: %s", e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message))
	}
	g.Expect(warnings).To(gomega.BeEmpty())
}

// watchPhases records every phase a job passes through, from a watch (a
// poll could miss a short-lived one), until the test ends; a watch the API
// server ends is resumed where it stopped. The function it returns gives
// the phases seen, each change once, as soon as the last is the one given:
// the test learns the job's end from another client, and this watch may
// show it a moment later.
func watchPhases(t *testing.T, g gomega.Gomega, ns, name string) func(last musterv1.JobPhase) []musterv1.JobPhase {
	cfg, err := cluster.RESTConfig()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: cluster.Client.Scheme()})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	only := client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", name)}
	list := &musterv1.TrainingJobList{}
	g.Expect(wc.List(ctx, list, client.InNamespace(ns), only)).To(gomega.Succeed())
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return wc.Watch(ctx, &musterv1.TrainingJobList{}, client.InNamespace(ns), only, &client.ListOptions{Raw: &o})
		},
	})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	t.Cleanup(w.Stop)
	var mu sync.Mutex
	var seen []musterv1.JobPhase
	go func() {
		for ev := range w.ResultChan() {
			job, ok := ev.Object.(*musterv1.TrainingJob)
			if !ok || job.Status.Phase == "" {
				continue
			}
			mu.Lock()
			if len(seen) == 0 || seen[len(seen)-1] != job.Status.Phase {
				seen = append(seen, job.Status.Phase)
			}
			mu.Unlock()
		}
	}()
	snapshot := func() []musterv1.JobPhase {
		mu.Lock()
		defer mu.Unlock()
		return append([]musterv1.JobPhase(nil), seen...)
	}
	lastOf := func(s []musterv1.JobPhase) musterv1.JobPhase {
		if len(s) == 0 {
			return ""
		}
		return s[len(s)-1]
	}
	return func(last musterv1.JobPhase) []musterv1.JobPhase {
		g.Eventually(snapshot, 30*time.Second, 100*time.Millisecond).
			Should(gomega.WithTransform(lastOf, gomega.Equal(last)), "the watch never saw the job %s", last)
		return snapshot()
	}
}
