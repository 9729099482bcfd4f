package objects

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

func endpoints(job, role string, n int, port string) string {
	var out []string
	for i := range n {
		out = append(out, job+"-"+role+"-"+strconv.Itoa(i)+"."+job+":"+port)
	}
	return strings.Join(out, ",")
}

func TestPaddleParameterServerEnv(t *testing.T) {
	for _, size := range [][2]int{{1, 1}, {2, 2}, {3, 5}} {
		job := testutil.MakeJob("ctr", "ns").Runtime(musterv1.Runtime{Paddle: &musterv1.PaddleRuntime{}}).
			Role("pserver", int32(size[0])).Role("trainer", int32(size[1])).Obj()
		pservers := endpoints("ctr", "pserver", size[0], "30236")
		trainers := endpoints("ctr", "trainer", size[1], "30236")
		common := map[string]string{
			"PADDLE_PSERVERS_IP_PORT_LIST": pservers, "PADDLE_PSERVER_ENDPOINTS": pservers, "PADDLE_PSERVERS": pservers,
			"PADDLE_TRAINER_ENDPOINTS": trainers,
			"PADDLE_PSERVERS_NUM":      strconv.Itoa(size[0]), "PADDLE_TRAINERS_NUM": strconv.Itoa(size[1]),
			"PADDLE_PORT": "30236", "PADDLE_JOB_NAME": "ctr", "PADDLE_IS_LOCAL": "0",
		}
		for i := range size[0] {
			pod := podOf(t, job, "pserver", int32(i))
			self := "ctr-pserver-" + strconv.Itoa(i) + ".ctr"
			checkEnv(t, pod, common)
			checkEnv(t, pod, map[string]string{
				"TRAINING_ROLE": "PSERVER", "PADDLE_TRAINING_ROLE": "PSERVER",
				"PADDLE_PSERVER_ID": strconv.Itoa(i), "PADDLE_TRAINER_ID": strconv.Itoa(i),
				"POD_IP": self, "PADDLE_CURRENT_IP": self, "PADDLE_CURRENT_ENDPOINT": self + ":30236",
				"POD_NAME": "ctr-pserver-" + strconv.Itoa(i),
			})
			if !strings.Contains(","+pservers+",", ","+testutil.Env(pod.Spec.Containers[0])["POD_IP"]+":30236,") {
				t.Errorf("%s: POD_IP:PADDLE_PORT must be in the pserver list, as Paddle looks it up there", pod.Name)
			}
			if w := waitedFor(pod); w != nil {
				t.Errorf("%s: a pserver only listens, it waits for nobody: %v", pod.Name, w)
			}
		}
		for i := range size[1] {
			pod := podOf(t, job, "trainer", int32(i))
			checkEnv(t, pod, common)
			checkEnv(t, pod, map[string]string{
				"TRAINING_ROLE": "TRAINER", "PADDLE_TRAINING_ROLE": "TRAINER",
				"PADDLE_TRAINER_ID": strconv.Itoa(i), "PADDLE_PSERVER_ID": "",
			})
			if diff := cmp.Diff(hostsOnly(strings.Split(pservers, ",")), waitedFor(pod)); diff != "" {
				t.Errorf("%s: a trainer waits for the pservers (-want +got):\n%s", pod.Name, diff)
			}
			if env := testutil.Env(pod.Spec.Containers[0]); env["NAMESPACE"] != "" {
				t.Errorf("NAMESPACE comes from the pod's own field, got a value %q", env["NAMESPACE"])
			}
		}
	}
}

func TestPaddleCollectiveEnv(t *testing.T) {
	job := testutil.MakeJob("col", "ns").Runtime(musterv1.Runtime{Paddle: &musterv1.PaddleRuntime{
		Mode: musterv1.PaddleCollective, TrainerRole: "gpu", Port: 6170,
	}}).Role("prep", 1).Role("gpu", 3).Obj()
	trainers := endpoints("col", "gpu", 3, "6170")
	for i := range 3 {
		pod := podOf(t, job, "gpu", int32(i))
		self := "col-gpu-" + strconv.Itoa(i) + ".col"
		checkEnv(t, pod, map[string]string{
			"PADDLE_TRAINER_ENDPOINTS": trainers, "PADDLE_CURRENT_ENDPOINT": self + ":6170",
			"PADDLE_TRAINER_ID": strconv.Itoa(i), "PADDLE_TRAINERS_NUM": "3", "TRAINING_ROLE": "TRAINER",
			"PADDLE_PSERVERS_IP_PORT_LIST": "", "PADDLE_PSERVERS_NUM": "",
		})
		if diff := cmp.Diff(except(hostsOnly(strings.Split(trainers, ",")), self), waitedFor(pod)); diff != "" {
			t.Errorf("%s waits for every other trainer (-want +got):\n%s", pod.Name, diff)
		}
	}
	checkEnv(t, podOf(t, job, "prep", 0), map[string]string{"TRAINING_ROLE": "", "PADDLE_TRAINER_ID": ""})
}

// Launch sets what paddle.distributed.launch reads, as Kubeflow's
// PaddleJob does, and none of Fleet's lists: the launchers meet at task 0
// of the pserver role (of the trainers, collective), which is told its
// own IP, since the launcher serves the master only when its host is the
// pod's address.
func TestPaddleLaunchEnv(t *testing.T) {
	launch := func(mode musterv1.PaddleMode) *musterv1.TrainingJob {
		return testutil.MakeJob("pj", "ns").Runtime(musterv1.Runtime{Paddle: &musterv1.PaddleRuntime{
			Launcher: musterv1.PaddleLaunch, Mode: mode, PServerRole: "master", TrainerRole: "worker", Port: 36543,
		}}).Role("master", 2).Role("worker", 3).Obj()
	}
	fleet := map[string]string{"PADDLE_TRAINER_ENDPOINTS": "", "PADDLE_PSERVERS_IP_PORT_LIST": "", "TRAINING_ROLE": "", "PADDLE_PORT": ""}
	ps := launch(musterv1.PaddleParameterServer)
	for _, task := range []struct {
		role  string
		index int32
		want  map[string]string
	}{
		{"master", 0, map[string]string{"PADDLE_MASTER": "$(POD_IP_DUMMY):36543", "PADDLE_SERVER_NUM": "1", "PADDLE_TRAINER_NUM": ""}},
		{"master", 1, map[string]string{"PADDLE_MASTER": "pj-master-0.pj:36543", "PADDLE_SERVER_NUM": "1", "POD_IP_DUMMY": ""}},
		{"worker", 2, map[string]string{"PADDLE_MASTER": "pj-master-0.pj:36543", "PADDLE_TRAINER_NUM": "1", "PADDLE_SERVER_NUM": ""}},
	} {
		pod := podOf(t, ps, task.role, task.index)
		checkEnv(t, pod, map[string]string{"PADDLE_JOB_ID": "pj", "PADDLE_NNODES": "5", "PYTHONUNBUFFERED": "1"})
		checkEnv(t, pod, task.want)
		checkEnv(t, pod, fleet)
		wait := []string{"pj-master-0.pj"}
		if task.role == "master" && task.index == 0 {
			wait = nil
			if ip := pod.Spec.Containers[0].Env[slices.IndexFunc(pod.Spec.Containers[0].Env, func(e corev1.EnvVar) bool {
				return e.Name == "POD_IP_DUMMY"
			})]; ip.ValueFrom == nil || ip.ValueFrom.FieldRef.FieldPath != "status.podIP" {
				t.Errorf("POD_IP_DUMMY = %+v, want the pod's IP", ip)
			}
		}
		if diff := cmp.Diff(wait, waitedFor(pod)); diff != "" {
			t.Errorf("%s waits for (-want +got):\n%s", pod.Name, diff)
		}
	}
	col := launch(musterv1.PaddleCollective)
	checkEnv(t, podOf(t, col, "worker", 0), map[string]string{"PADDLE_MASTER": "$(POD_IP_DUMMY):36543", "PADDLE_NNODES": "3",
		"PADDLE_TRAINER_NUM": "", "PADDLE_SERVER_NUM": ""})
	checkEnv(t, podOf(t, col, "worker", 1), map[string]string{"PADDLE_MASTER": "pj-worker-0.pj:36543"})
	checkEnv(t, podOf(t, col, "master", 0), map[string]string{"PADDLE_MASTER": "", "PADDLE_JOB_ID": ""})
}

func TestPaddleUsersValuesWin(t *testing.T) {
	job := testutil.MakeJob("ctr", "ns").Runtime(musterv1.Runtime{Paddle: &musterv1.PaddleRuntime{}}).
		Role("pserver", 1).Role("trainer", 1).Template(func(p *corev1.PodTemplateSpec) {
		p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: "PADDLE_JOB_NAME", Value: "fluid-ctr"})
	}).Obj()
	checkEnv(t, podOf(t, job, "trainer", 0), map[string]string{"PADDLE_JOB_NAME": "fluid-ctr"})
}

func TestPaddlePodListGetsExactlyPodReadRBAC(t *testing.T) {
	job := testutil.MakeJob("ctr", "ns").UID("u").Runtime(musterv1.Runtime{Paddle: &musterv1.PaddleRuntime{
		PeerDiscovery: musterv1.PeerDiscoveryPodList,
	}}).Role("pserver", 2).Role("trainer", 2).Template(func(p *corev1.PodTemplateSpec) {
		p.Spec.ServiceAccountName = "own"
	}).Obj()
	objs := DesiredRuntimeObjects(job)
	if len(objs) != 3 {
		t.Fatalf("objects = %v, want a ServiceAccount, a Role and a RoleBinding", objs)
	}
	for _, o := range objs {
		if o.GetName() != "ctr-pod-reader" || len(o.GetOwnerReferences()) != 1 || o.GetOwnerReferences()[0].UID != "u" {
			t.Errorf("%T %s owners %v: want ctr-pod-reader owned by the job", o, o.GetName(), o.GetOwnerReferences())
		}
	}
	role, ok := objs[1].(*rbacv1.Role)
	if !ok {
		t.Fatalf("second object is %T", objs[1])
	}
	want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}}
	if diff := cmp.Diff(want, role.Rules); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	binding, ok := objs[2].(*rbacv1.RoleBinding)
	if !ok || binding.RoleRef.Name != "ctr-pod-reader" || binding.Subjects[0].Name != "ctr-pod-reader" || binding.Subjects[0].Namespace != "ns" {
		t.Errorf("binding = %+v", objs[2])
	}
	if sa := podOf(t, job, "pserver", 0).Spec.ServiceAccountName; sa != "ctr-pod-reader" {
		t.Errorf("pserver service account = %q", sa)
	}
	if sa := podOf(t, job, "trainer", 0).Spec.ServiceAccountName; sa != "own" {
		t.Errorf("a template's own service account must win, got %q", sa)
	}
	env := testutil.MakeJob("ctr", "ns").Runtime(musterv1.Runtime{Paddle: &musterv1.PaddleRuntime{}}).Role("pserver", 1).Role("trainer", 1).Obj()
	if objs := DesiredRuntimeObjects(env); len(objs) != 0 {
		t.Errorf("peer discovery through the environment needs no RBAC, got %v", objs)
	}
}
