package objects

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

func TestDesiredPod(t *testing.T) {
	job := testutil.MakeJob("pet", "team").UID("uid-1").Role("worker", 3).Template(func(p *corev1.PodTemplateSpec) {
		p.Labels = map[string]string{"app": "{{MUSTER_JOB_NAME}}"}
		p.Spec.Containers[0].Env = []corev1.EnvVar{
			{Name: "OUT", Value: "/ckpt/$(MUSTER_TASK_INDEX)"},
			{Name: musterv1.EnvRoleName, Value: "mine"},
		}
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox"}}
	}).Obj()
	pod, err := DesiredPod(job, &job.Spec.Roles[0], 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if pod.Name != "pet-worker-2" || pod.Namespace != "team" || pod.Spec.Hostname != "pet-worker-2" || pod.Spec.Subdomain != "pet" {
		t.Errorf("naming: name %q ns %q hostname %q subdomain %q", pod.Name, pod.Namespace, pod.Spec.Hostname, pod.Spec.Subdomain)
	}
	if pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy = %q, want Never", pod.Spec.RestartPolicy)
	}
	wantLabels := map[string]string{
		"app": "pet", musterv1.LabelJobName: "pet", musterv1.LabelRole: "worker",
		musterv1.LabelTaskIndex: "2", musterv1.LabelJobAttempt: "0", musterv1.LabelTaskAttempt: "3",
	}
	if diff := cmp.Diff(wantLabels, pod.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if ref := pod.OwnerReferences; len(ref) != 1 || ref[0].UID != "uid-1" || !*ref[0].Controller {
		t.Errorf("owner references = %+v", ref)
	}
	c := pod.Spec.Containers[0]
	if c.Env[0].Name != musterv1.EnvJobNamespace {
		t.Errorf("Muster's variables must come first, got %s first", c.Env[0].Name)
	}
	if c.Env[len(c.Env)-1].Name != musterv1.EnvRoleName || c.Env[len(c.Env)-1].Value != "mine" {
		t.Errorf("the user's value must win and keep its place: %+v", c.Env)
	}
	env := testutil.Env(c)
	for k, v := range map[string]string{
		musterv1.EnvJobName: "pet", musterv1.EnvJobUID: "uid-1", musterv1.EnvTaskIndex: "2",
		musterv1.EnvTaskAttempt: "3", musterv1.EnvRoleReplicas: "3", musterv1.EnvPodName: "pet-worker-2",
		musterv1.EnvServiceName: "pet",
	} {
		if env[k] != v {
			t.Errorf("env %s = %q, want %q", k, env[k], v)
		}
	}
	if c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
		t.Errorf("terminationMessagePolicy = %q", c.TerminationMessagePolicy)
	}
	if testutil.Env(pod.Spec.InitContainers[0])[musterv1.EnvTaskIndex] != "2" {
		t.Error("init containers get Muster's variables too")
	}
}

func TestPyTorchEnv(t *testing.T) {
	job := testutil.MakeJob("pt", "ns").UID("u").PyTorch().Role("worker", 2).Role("master", 1).Obj()
	cases := map[string]struct {
		role  int
		index int32
		want  map[string]string
	}{
		"master is rank 0 and needs no DNS for itself": {1, 0, map[string]string{"RANK": "0", "WORLD_SIZE": "3", "MASTER_ADDR": "localhost", "MASTER_PORT": "23456"}},
		"workers follow the master":                    {0, 1, map[string]string{"RANK": "2", "WORLD_SIZE": "3", "MASTER_ADDR": "pt-master-0.pt", "MASTER_PORT": "23456"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod, err := DesiredPod(job, &job.Spec.Roles[tc.role], tc.index, 1)
			if err != nil {
				t.Fatal(err)
			}
			env := testutil.Env(pod.Spec.Containers[0])
			for k, v := range tc.want {
				if env[k] != v {
					t.Errorf("%s = %q, want %q", k, env[k], v)
				}
			}
		})
	}
}

func TestElasticEnv(t *testing.T) {
	cases := map[string]struct {
		store    musterv1.RendezvousStore
		endpoint string
		index    int32
		want     map[string]string
	}{
		"dedicated store (the default): every agent is a client": {"", "", 0, map[string]string{
			"PET_RDZV_ENDPOINT": "el-store.el:29400", "PET_RDZV_CONF": "last_call_timeout=5,join_timeout=600,is_host=false"}},
		"worker store: task 0 hosts it": {musterv1.StoreWorker, "", 0, map[string]string{
			"PET_RDZV_ENDPOINT": "localhost:29400", "PET_RDZV_CONF": "last_call_timeout=5,join_timeout=600"}},
		"worker store: the others connect to task 0": {musterv1.StoreWorker, "", 1, map[string]string{
			"PET_RDZV_ENDPOINT": "el-worker-0.el:29400"}},
		"external store": {musterv1.StoreExternal, "etcd.infra:2379", 1, map[string]string{
			"PET_RDZV_ENDPOINT": "etcd.infra:2379"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := testutil.MakeJob("el", "ns").UID("u").Role("worker", 3).Elastic(2, 4).Obj()
			job.Spec.Runtime.PyTorch.Elastic.Rendezvous = musterv1.Rendezvous{Store: tc.store, Endpoint: tc.endpoint}
			pod, err := DesiredPod(job, &job.Spec.Roles[0], tc.index, 1)
			if err != nil {
				t.Fatal(err)
			}
			env := testutil.Env(pod.Spec.Containers[0])
			want := map[string]string{"PET_NNODES": "2:4", "PET_RDZV_BACKEND": "c10d", "PET_RDZV_ID": "u",
				"PET_NPROC_PER_NODE": "1", "PET_MAX_RESTARTS": "3", "PET_MONITOR_INTERVAL": "1"}
			for k, v := range tc.want {
				want[k] = v
			}
			for k, v := range want {
				if env[k] != v {
					t.Errorf("%s = %q, want %q", k, env[k], v)
				}
			}
			if _, ok := env["RANK"]; ok {
				t.Error("torchrun sets RANK itself; the operator must not")
			}
		})
	}
}

func TestApplyPlaceholdersLeavesUnknownOnes(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "c", Args: []string{"{{MUSTER_JOB_NAMESPACE}}/{{MUSTER_ATTEMPT_ID}}/{{MUSTER_JOB_UID}}", "{{OTHER}}"},
	}}}}
	got, err := ApplyPlaceholders(tmpl, Placeholders{JobNamespace: "ns", JobAttempt: 2, JobUID: "u"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ns/2/u", "{{OTHER}}"}, got.Spec.Containers[0].Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	if tmpl.Spec.Containers[0].Args[1] != "{{OTHER}}" || tmpl.Spec.Containers[0].Args[0][0] != '{' {
		t.Error("the template itself must not change")
	}
}

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
		"job-wide command, skip init": {debug: musterv1.DebugPolicy{Command: []string{"bash"}, RunInitContainers: new(false)}, role: "worker", wantCommand: []string{"bash"}},
		"the role's own settings win": {
			debug: musterv1.DebugPolicy{Command: []string{"bash"}, Roles: []musterv1.RoleDebug{{Name: "master", Command: []string{"sleep", "600"}, RunInitContainers: new(false)}}},
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

// The store pod watches the very rendezvous the agents join: without the
// agents' run id it could not release an exit barrier that waits on an agent
// that is gone.
func TestStorePodWatchesTheAgentsRendezvous(t *testing.T) {
	job := testutil.MakeJob("el", "ns").UID("u").Role("worker", 3).Elastic(2, 4).Obj()
	store, err := DesiredStorePod(job)
	if err != nil {
		t.Fatal(err)
	}
	worker, err := DesiredPod(job, &job.Spec.Roles[0], 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	got, want := testutil.Env(store.Spec.Containers[0])["MUSTER_RDZV_ID"], testutil.Env(worker.Spec.Containers[0])["PET_RDZV_ID"]
	if got == "" || got != want {
		t.Errorf("store's MUSTER_RDZV_ID = %q, the agents' PET_RDZV_ID = %q", got, want)
	}
}
