package debug

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/cli/clitest"
	"github.com/muster-dev/muster/internal/gang/volcano"
)

// workerPod is pet's worker-1 as the operator made it: owned by the job,
// in its gang, on a node, with probes.
func workerPod() *corev1.Pod {
	job := clitest.ElasticJob()
	pod := clitest.ElasticPods()[2]
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: musterv1.GroupVersion.String(), Kind: "TrainingJob",
		Name: job.Name, UID: job.UID, Controller: ptr.To(true)}}
	pod.Labels["app"] = "pet"
	pod.Annotations = map[string]string{musterv1.AnnotationJobUID: string(job.UID), volcano.AnnotationGroupName: "pet-1",
		volcano.AnnotationTaskSpec: "worker", "team.example/owner": "vision"}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	pod.Spec = corev1.PodSpec{
		NodeName: "gpu-7", SchedulerName: "volcano", Hostname: "pet-worker-1", Subdomain: "pet",
		RestartPolicy:  corev1.RestartPolicyNever,
		NodeSelector:   map[string]string{"gpu": "a100"},
		Tolerations:    []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		Volumes:        []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "imagenet"}}}},
		InitContainers: []corev1.Container{{Name: "wait", Image: "busybox", Command: []string{"sh", "-c", "until nslookup pet-store; do sleep 1; done"}}},
		Containers: []corev1.Container{{
			Name: "main", Image: "pytorch/pytorch:2.5.1-cuda", Command: []string{"torchrun"}, Args: []string{"train.py"},
			Env:           []corev1.EnvVar{{Name: musterv1.EnvJobName, Value: "pet"}, {Name: musterv1.EnvPodName, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
			VolumeMounts:  []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			LivenessProbe: probe, ReadinessProbe: probe,
		}},
	}
	pod.Status.Phase = corev1.PodRunning
	return pod
}

func withPet(extra ...runtime.Object) []runtime.Object {
	return append([]runtime.Object{clitest.ElasticJob(), clitest.FailedJob(), workerPod()}, extra...)
}

func TestDebugTask(t *testing.T) {
	cases := map[string][]string{
		"task-dry-run":     {"pet", "--task", "worker/1", "--dry-run=client", "-o", "yaml"},
		"task-same-node":   {"pet", "--task", "worker/1", "--same-node", "--skip-init-containers", "--dry-run=client", "-o", "yaml", "--", "python3", "-m", "pdb", "train.py"},
		"task":             {"pet", "--task", "worker/1"},
		"task-server-dry":  {"pet", "--task", "worker/1", "--dry-run=server"},
		"task-its-command": {"pet", "--task", "worker/1", "--", "bash", "-c", "sleep 3600"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			r := clitest.Run(t, NewCmd, clitest.NewFactory(clitest.Options{}, withPet()...), args...)
			if r.Error != nil {
				t.Fatalf("error: %v\nstderr: %s", r.Error, r.Err)
			}
			clitest.Golden(t, "debug-"+name, r.Out+r.Err)
		})
	}
}

// The copy is outside the job: no owner, none of the labels the operator,
// the job's Service and its gang select on; its command is the debug one.
func TestDebugTaskCopyIsOutsideTheJob(t *testing.T) {
	f := clitest.NewFactory(clitest.Options{}, withPet()...)
	if r := clitest.Run(t, NewCmd, f, "pet", "--task", "worker/1"); r.Error != nil {
		t.Fatal(r.Error)
	}
	pod, err := f.Kube.CoreV1().Pods("team").Get(context.Background(), "pet-worker-1-debug", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pod.OwnerReferences) > 0 || pod.Labels[musterv1.LabelJobName] != "" || len(pod.Labels) != 1 || pod.Labels[LabelDebugCopyOf] != "pet-worker-1" {
		t.Errorf("owners %v labels %v", pod.OwnerReferences, pod.Labels)
	}
	if _, ok := pod.Annotations[volcano.AnnotationGroupName]; ok || pod.Spec.SchedulerName != "" || pod.Spec.NodeName != "" {
		t.Errorf("still tied to the gang or the node: %v %q %q", pod.Annotations, pod.Spec.SchedulerName, pod.Spec.NodeName)
	}
	c := pod.Spec.Containers[0]
	if strings.Join(c.Command, " ") != "sleep inf" || c.Args != nil || c.LivenessProbe != nil || c.ReadinessProbe != nil {
		t.Errorf("container %+v", c)
	}
	if pod.Spec.NodeSelector["gpu"] != "a100" || len(pod.Spec.Tolerations) != 1 || len(pod.Spec.Volumes) != 1 || len(c.Env) != 2 || len(pod.Spec.InitContainers) != 1 {
		t.Errorf("the task's environment is not all there: %+v", pod.Spec)
	}
}

func TestDebugJob(t *testing.T) {
	cases := map[string][]string{
		"file-dry-run":     {"-f", "testdata/job.yaml", "--dry-run=client", "-o", "yaml"},
		"file-one-role":    {"-f", "testdata/job.yaml", "--role", "worker", "--skip-init-containers", "--dry-run=client", "-o", "yaml", "--", "python3", "-m", "pdb", "train.py"},
		"file":             {"-f", "testdata/job.yaml"},
		"copy":             {"pet", "--copy", "pet-debug", "--role", "worker", "--", "bash", "-c", "sleep 3600"},
		"copy-dry-run":     {"pet", "--copy", "pet-debug", "--dry-run=client", "-o", "yaml"},
		"copy-server-dry":  {"pet", "--copy", "pet-debug", "--dry-run=server"},
		"copy-output-name": {"pet", "--copy", "pet-debug", "-o", "name"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			r := clitest.Run(t, NewCmd, clitest.NewFactory(clitest.Options{}, withPet()...), args...)
			if r.Error != nil {
				t.Fatalf("error: %v\nstderr: %s", r.Error, r.Err)
			}
			clitest.Golden(t, "debug-"+name, r.Out+r.Err)
		})
	}
}

// A copy runs anew in debug mode, whatever the original's state: it is
// not stopped, held or suspended because the original was.
func TestDebugCopyRunsAnew(t *testing.T) {
	orig := clitest.ElasticJob()
	orig.Spec.Run.Execution = musterv1.ExecutionStop
	orig.Spec.Run.Execution = musterv1.ExecutionSuspend
	orig.Spec.Run.RestartRequest = "2026-03-01T11:00:00Z"
	orig.Annotations = map[string]string{lastApplied: "{}"}
	f := clitest.NewFactory(clitest.Options{}, orig)
	if r := clitest.Run(t, NewCmd, f, "pet", "--copy", "pet-debug"); r.Error != nil {
		t.Fatal(r.Error)
	}
	job := &musterv1.TrainingJob{}
	if err := f.Jobs.Get(context.Background(), client.ObjectKey{Namespace: "team", Name: "pet-debug"}, job); err != nil {
		t.Fatal(err)
	}
	run := job.Spec.Run
	if run.Debug == nil || run.Debug.Command != nil || run.Execution != "" || run.ResumeRequest != "" || run.RestartRequest != "" ||
		job.Annotations[lastApplied] != "" || job.Status.Phase != "" || len(job.Spec.Roles) != 2 {
		t.Errorf("copy %+v %+v", job.ObjectMeta, job.Spec.Run)
	}
}

func TestDebugErrors(t *testing.T) {
	noPods := clitest.NewFactory(clitest.Options{}, clitest.ElasticJob())
	cases := map[string]struct {
		factory *clitest.Factory
		args    []string
		want    string
	}{
		"nothing to do":       {nil, []string{"pet"}, "say what to debug: -f FILE"},
		"two things":          {nil, []string{"pet", "--copy", "x", "--task", "worker/0"}, "-f, --copy and --task each make something else: give one of them"},
		"a file and a job":    {nil, []string{"pet", "-f", "testdata/job.yaml"}, "-f reads the job from a file: leave out the job name pet"},
		"no job for --task":   {nil, []string{"--task", "worker/0"}, "name the job: muster debug JOB --task worker/0"},
		"no job for --copy":   {nil, []string{"--copy", "x"}, "name the job: muster debug JOB --copy x"},
		"two jobs":            {nil, []string{"pet", "bad", "--copy", "x"}, "one job name before --, got [pet bad]"},
		"a bad task":          {nil, []string{"pet", "--task", "worker-1"}, `--task "worker-1": ROLE/INDEX, e.g. worker/0`},
		"a negative index":    {nil, []string{"pet", "--task", "worker/-1"}, `--task "worker/-1": ROLE/INDEX`},
		"same node, no task":  {nil, []string{"pet", "--copy", "x", "--same-node"}, "--same-node is for --task"},
		"role and task":       {nil, []string{"pet", "--task", "worker/0", "--role", "worker"}, "--role is for -f and --copy"},
		"role, no command":    {nil, []string{"pet", "--copy", "x", "--role", "worker"}, "--role gives the named roles the command after --: give one"},
		"a bad dry run":       {nil, []string{"pet", "--copy", "x", "--dry-run=yes"}, "--dry-run=yes: none, client or server"},
		"no such job":         {nil, []string{"nope", "--task", "worker/0"}, "trainingjob team/nope not found: `muster get -n team` lists the namespace's jobs"},
		"no such job to copy": {nil, []string{"nope", "--copy", "x"}, "trainingjob team/nope not found"},
		"no such role":        {nil, []string{"pet", "--task", "ps/0"}, `trainingjob team/pet has no role "ps" (--task ps/0): its roles are launcher, worker`},
		"no such role, copy":  {nil, []string{"pet", "--copy", "x", "--role", "ps", "--", "sh"}, `trainingjob team/pet has no role "ps" (--role): its roles are launcher, worker`},
		"index out of range":  {nil, []string{"pet", "--task", "worker/3"}, "trainingjob team/pet: role worker has 3 tasks, indexes 0 to 2 (--task worker/3): `muster describe pet` lists them"},
		"no pod yet":          {noPods, []string{"pet", "--task", "worker/2"}, "trainingjob team/pet has no pod for task worker/2 yet (phase Running, task Running): wait until it runs (muster wait pet --for=phase=Running) and try again"},
		"copy already there":  {nil, []string{"pet", "--copy", "bad"}, "trainingjob team/bad already exists: delete it first (muster delete bad -n team) or choose another name with --copy"},
		"debug pod there":     {clitest.NewFactory(clitest.Options{}, withPet(CopyPod(workerPod(), nil, false, false))...), []string{"pet", "--task", "worker/1"}, "pod team/pet-worker-1-debug already exists, a debug copy made before: exec into it, or delete it (kubectl delete pod -n team pet-worker-1-debug) and run this again"},
		"a file of two jobs":  {nil, []string{"-f", "testdata/job.yaml", "-f", "testdata/job.yaml"}, "testdata/job.yaml, testdata/job.yaml holds 2 TrainingJobs: debug starts one job"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := tc.factory
			if f == nil {
				f = clitest.NewFactory(clitest.Options{}, withPet()...)
			}
			r := clitest.Run(t, NewCmd, f, tc.args...)
			if r.Error == nil || !strings.Contains(r.Error.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", r.Error, tc.want)
			}
		})
	}
}
