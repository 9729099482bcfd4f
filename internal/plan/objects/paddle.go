package objects

import (
	"cmp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// Paddle's role names, as TRAINING_ROLE spells them.
const (
	paddlePServer = "PSERVER"
	paddleTrainer = "TRAINER"
)

// PaddleRoles are the pserver and trainer roles of a Paddle runtime, with
// defaults applied.
func PaddleRoles(p *musterv1.PaddleRuntime) (pserver, trainer string) {
	return cmp.Or(p.PServerRole, "pserver"), cmp.Or(p.TrainerRole, "trainer")
}

// paddleWiring sets the PADDLE_* variables of the pserver and trainer
// roles; other roles of the job (a data preparation step, say) get none.
//
// Endpoints are the pods' DNS names, not addresses: those are unknown when
// the pods are made, and a name is stable across restarts. POD_IP is the
// task's own name for the same reason: Paddle finds a pserver's place by
// looking up POD_IP:PADDLE_PORT in the endpoint list, so both must be
// spelled alike.
func paddleWiring(t taskRef, p *musterv1.PaddleRuntime) wiring {
	pserverRole, trainerRole := PaddleRoles(p)
	collective := p.Mode == musterv1.PaddleCollective
	if t.role.Name != trainerRole && (collective || t.role.Name != pserverRole) {
		return wiring{}
	}
	if p.Launcher == musterv1.PaddleLaunch {
		return paddleLaunchWiring(t, p)
	}
	port := cmp.Or(p.Port, musterv1.DefaultPaddlePort)
	self := PodDNSName(t.job, t.role.Name, t.index)
	var trainers, pservers []string
	if r := topology.Find(t.job, trainerRole); r != nil {
		trainers = withPort(roleHosts(t.job, r), port)
	}
	if r := topology.Find(t.job, pserverRole); r != nil && !collective {
		pservers = withPort(roleHosts(t.job, r), port)
	}
	id := strconv.Itoa(int(t.index))
	role := paddleTrainer
	if t.role.Name == pserverRole && !collective {
		role = paddlePServer
	}
	env := []corev1.EnvVar{
		{Name: "TRAINING_ROLE", Value: role},
		{Name: "PADDLE_TRAINING_ROLE", Value: role},
		{Name: "PADDLE_JOB_NAME", Value: t.job.Name},
		{Name: "PADDLE_IS_LOCAL", Value: "0"},
		{Name: "PADDLE_PORT", Value: strconv.Itoa(int(port))},
		{Name: "POD_IP", Value: self},
		{Name: "PADDLE_CURRENT_IP", Value: self},
		{Name: "PADDLE_CURRENT_ENDPOINT", Value: self + ":" + strconv.Itoa(int(port))},
		{Name: "POD_NAME", Value: t.podName()},
		fieldEnv("NAMESPACE", "metadata.namespace"),
		{Name: "PADDLE_TRAINERS_NUM", Value: strconv.Itoa(len(trainers))},
		{Name: "PADDLE_TRAINER_ENDPOINTS", Value: strings.Join(trainers, ",")},
		// A pserver is told its own index as PADDLE_TRAINER_ID too, as
		// paddle_k8s does.
		{Name: "PADDLE_TRAINER_ID", Value: id},
	}
	if !collective {
		list := strings.Join(pservers, ",")
		env = append(env,
			corev1.EnvVar{Name: "PADDLE_PSERVERS_NUM", Value: strconv.Itoa(len(pservers))},
			corev1.EnvVar{Name: "PADDLE_PSERVERS_IP_PORT_LIST", Value: list},
			corev1.EnvVar{Name: "PADDLE_PSERVER_ENDPOINTS", Value: list},
			corev1.EnvVar{Name: "PADDLE_PSERVERS", Value: list},
		)
		if role == paddlePServer {
			env = append(env, corev1.EnvVar{Name: "PADDLE_PSERVER_ID", Value: id})
		}
	}
	env = append(env, corev1.EnvVar{Name: "PYTHONUNBUFFERED", Value: "1"})
	w := wiring{env: env}
	switch {
	case collective:
		// Every trainer meets every other.
		w.waitFor = except(hostsOnly(trainers), self)
	case role == paddleTrainer:
		// Trainers connect to the pservers; pservers only listen.
		w.waitFor = hostsOnly(pservers)
	}
	if p.PeerDiscovery == musterv1.PeerDiscoveryPodList {
		w.serviceAccount = PodReaderName(t.job)
	}
	return w
}

// paddleLaunchWiring sets what paddle.distributed.launch reads, as
// Kubeflow's PaddleJob sets it. The launchers meet at PADDLE_MASTER, which
// the master's own launcher serves only when its host is the pod's IP (it
// compares the two): so the master is told its IP, the others its name,
// which they wait for.
func paddleLaunchWiring(t taskRef, p *musterv1.PaddleRuntime) wiring {
	pserverRole, trainerRole := PaddleRoles(p)
	collective := p.Mode == musterv1.PaddleCollective
	masterRole := pserverRole
	if collective {
		masterRole = trainerRole
	}
	var nodes int32
	for _, name := range []string{pserverRole, trainerRole} {
		if r := topology.Find(t.job, name); r != nil && (name == trainerRole || !collective) {
			nodes += topology.Replicas(r)
		}
	}
	port := ":" + strconv.Itoa(int(cmp.Or(p.Port, musterv1.DefaultPaddlePort)))
	env := []corev1.EnvVar{
		{Name: "PADDLE_JOB_ID", Value: t.job.Name},
		{Name: "PADDLE_NNODES", Value: strconv.Itoa(int(nodes))},
	}
	var w wiring
	master := PodDNSName(t.job, masterRole, 0)
	if t.role.Name == masterRole && t.index == 0 {
		env = append(env, fieldEnv("POD_IP_DUMMY", "status.podIP"), corev1.EnvVar{Name: "PADDLE_MASTER", Value: "$(POD_IP_DUMMY)" + port})
	} else {
		env = append(env, corev1.EnvVar{Name: "PADDLE_MASTER", Value: master + port})
		w.waitFor = []string{master}
	}
	switch {
	case collective:
	case t.role.Name == pserverRole:
		env = append(env, corev1.EnvVar{Name: "PADDLE_SERVER_NUM", Value: "1"})
	default:
		env = append(env, corev1.EnvVar{Name: "PADDLE_TRAINER_NUM", Value: "1"})
	}
	w.env = append(env, corev1.EnvVar{Name: "PYTHONUNBUFFERED", Value: "1"})
	if p.PeerDiscovery == musterv1.PeerDiscoveryPodList {
		w.serviceAccount = PodReaderName(t.job)
	}
	return w
}

// hostsOnly strips the ports from endpoints: the wait step checks that
// their names resolve. It does not wait for the ports, which are opened
// by peers that may themselves be waiting.
func hostsOnly(endpoints []string) []string {
	out := make([]string, len(endpoints))
	for i, e := range endpoints {
		out[i], _, _ = strings.Cut(e, ":")
	}
	return out
}

// PodReaderName names the ServiceAccount, Role and RoleBinding of a job
// whose pods list pods.
func PodReaderName(job *musterv1.TrainingJob) string { return job.Name + "-pod-reader" }

// podReaderRBAC lets the job's pods get and list the pods of their
// namespace, and nothing else: what an image that discovers its peers
// through the API (paddle_k8s waits for its peers to run, then reads their
// addresses and its own place among them) needs.
func podReaderRBAC(job *musterv1.TrainingJob) []client.Object {
	name := PodReaderName(job)
	return []client.Object{
		&corev1.ServiceAccount{ObjectMeta: childMeta(job, name)},
		&rbacv1.Role{
			ObjectMeta: childMeta(job, name),
			Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"},
			}},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: childMeta(job, name),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: job.Namespace}},
		},
	}
}
