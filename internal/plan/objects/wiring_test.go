package objects

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/topology"
	"github.com/muster-dev/muster/internal/testutil"
)

// podOf builds the pod of a task of the named role, from the job as the
// operator runs it.
func podOf(t *testing.T, job *musterv1.TrainingJob, role string, index int32) *corev1.Pod {
	t.Helper()
	job = topology.Effective(job)
	r := topology.Find(job, role)
	if r == nil {
		t.Fatalf("no role %q", role)
	}
	pod, err := DesiredPod(job, r, index, 1)
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// checkEnv compares the named variables of the pod's first container; an
// empty want means the variable must be absent.
func checkEnv(t *testing.T, pod *corev1.Pod, want map[string]string) {
	t.Helper()
	env := testutil.Env(pod.Spec.Containers[0])
	for k, v := range want {
		got, ok := env[k]
		switch {
		case v == "" && ok:
			t.Errorf("%s: %s = %q, want it unset", pod.Name, k, got)
		case v != "" && got != v:
			t.Errorf("%s: %s = %q, want %q", pod.Name, k, got, v)
		}
	}
}

// waitedFor is what the pod's wait step waits for, nil without one.
func waitedFor(pod *corev1.Pod) []string {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == WaitContainerName {
			return c.Command[4:]
		}
	}
	return nil
}

func TestWaitStepTakesTheTaskImageAndComesFirst(t *testing.T) {
	job := testutil.MakeJob("j", "ns").Runtime(musterv1.Runtime{JAX: &musterv1.JAXRuntime{}}).Role("worker", 2).Template(func(p *corev1.PodTemplateSpec) {
		p.Spec.InitContainers = []corev1.Container{{Name: "fetch", Image: "busybox"}}
		p.Spec.Containers[0].Image = "jax:1"
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	}).Obj()
	pod := podOf(t, job, "worker", 1)
	if n := len(pod.Spec.InitContainers); n != 2 || pod.Spec.InitContainers[0].Name != WaitContainerName {
		t.Fatalf("init containers = %+v, want the wait step first", pod.Spec.InitContainers)
	}
	w := pod.Spec.InitContainers[0]
	if w.Image != "jax:1" || !w.Resources.Limits.Cpu().Equal(resource.MustParse("2")) {
		t.Errorf("wait step image %q resources %v: want the first container's", w.Image, w.Resources)
	}
	if testutil.Env(w)[musterv1.EnvJobName] != "j" {
		t.Error("the wait step gets Muster's variables like any init container")
	}
	if pod := podOf(t, job, "worker", 0); len(pod.Spec.InitContainers) != 1 {
		t.Error("the coordinator waits for nobody")
	}
	debug := testutil.MakeJob("j", "ns").Runtime(musterv1.Runtime{JAX: &musterv1.JAXRuntime{}}).Role("worker", 2).
		Debug(musterv1.DebugPolicy{RunInitContainers: new(false)}).Obj()
	if pod := podOf(t, debug, "worker", 1); len(pod.Spec.InitContainers) != 0 {
		t.Error("debug's skipInitContainers skips the wait step too")
	}
}

func TestGenericAndPyTorchJobsNeedNoRuntimeObjects(t *testing.T) {
	for name, job := range map[string]*musterv1.TrainingJob{
		"generic": testutil.MakeJob("g", "ns").Role("worker", 2).Obj(),
		"pytorch": testutil.MakeJob("p", "ns").PyTorch().Role("worker", 2).Obj(),
		"tf":      testutil.MakeJob("t", "ns").Runtime(musterv1.Runtime{TensorFlow: &musterv1.TensorFlowRuntime{}}).Role("worker", 2).Obj(),
	} {
		if got := DesiredRuntimeObjects(job); len(got) != 0 {
			t.Errorf("%s: runtime objects %v, want none", name, got)
		}
		if pod := podOf(t, job, "worker", 0); len(pod.Spec.Volumes) != 0 || pod.Spec.ServiceAccountName != "" {
			t.Errorf("%s: volumes %v service account %q, want none", name, pod.Spec.Volumes, pod.Spec.ServiceAccountName)
		}
	}
}
