package objects

import (
	"cmp"
	_ "embed"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// StoreScript runs a c10d TCPStore server. The agents all connect to it as
// clients, so no worker's loss takes the rendezvous state with it; and it
// releases torch's exit barrier from waiting on an agent that is gone (see
// the script).
//
//go:embed store.py
var StoreScript string

// storeKind is the elastic role's rendezvous store, with defaults applied.
func storeKind(e *musterv1.ElasticPolicy) musterv1.RendezvousStore {
	if e.Rendezvous.Store == "" {
		return musterv1.StoreDedicated
	}
	return e.Rendezvous.Store
}

// HasDedicatedStore is whether the job runs a store pod of its own.
func HasDedicatedStore(job *musterv1.TrainingJob) bool {
	e := topology.ElasticPolicy(job)
	return e != nil && storeKind(e) == musterv1.StoreDedicated
}

// StorePodName is the name of the job's rendezvous store pod. Task pods
// always end in their index, so it never clashes with one.
func StorePodName(job *musterv1.TrainingJob) string { return job.Name + "-store" }

func rendezvousPort(e *musterv1.ElasticPolicy) int32 {
	return cmp.Or(e.Rendezvous.Port, musterv1.DefaultRendezvousPort)
}

// RendezvousEndpoint is what task index's agent connects to, and whether
// the agent must not host the store itself.
func RendezvousEndpoint(job *musterv1.TrainingJob, e *musterv1.ElasticPolicy, role string, index int32) (endpoint string, client bool) {
	port := rendezvousPort(e)
	switch storeKind(e) {
	case musterv1.StoreExternal:
		return e.Rendezvous.Endpoint, true
	case musterv1.StoreWorker:
		// torch compares the endpoint with the agent's short hostname,
		// which never equals the pod's DNS name: task 0 is told localhost
		// so that it hosts the store.
		first := topology.ElasticRoles(job)[0]
		host := PodDNSName(job, first, 0)
		if role == first && index == 0 {
			host = "localhost"
		}
		return fmt.Sprintf("%s:%d", host, port), false
	default:
		return fmt.Sprintf("%s.%s:%d", StorePodName(job), ServiceName(job), port), true
	}
}

// DesiredStorePod builds the job's rendezvous store pod from the elastic
// role's template: its image (which has python3 and torch) and where it
// may be scheduled, with the command replaced and nothing else.
func DesiredStorePod(job *musterv1.TrainingJob) (*corev1.Pod, error) {
	e := topology.ElasticPolicy(job)
	first := topology.ElasticRoles(job)[0]
	role := topology.Find(job, first)
	if role == nil || len(role.Template.Spec.Containers) == 0 {
		return nil, fmt.Errorf("role %q has no container to take the rendezvous store's image from", first)
	}
	name := StorePodName(job)
	tmpl := role.Template.Spec
	c := tmpl.Containers[0]
	port := rendezvousPort(e)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: job.Namespace,
			Labels: map[string]string{
				musterv1.LabelJobName: job.Name, musterv1.LabelComponent: musterv1.ComponentStore,
				musterv1.LabelJobAttempt: strconv.Itoa(int(job.Status.Attempt)),
			},
			Annotations:     map[string]string{musterv1.AnnotationJobUID: string(job.UID)},
			OwnerReferences: []metav1.OwnerReference{OwnerReference(job)},
			Finalizers:      []string{musterv1.FinalizerTracking},
		},
		Spec: corev1.PodSpec{
			Hostname: name, Subdomain: ServiceName(job),
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: new(int64(5)),
			NodeSelector:                  tmpl.NodeSelector,
			Affinity:                      tmpl.Affinity,
			Tolerations:                   tmpl.Tolerations,
			ImagePullSecrets:              tmpl.ImagePullSecrets,
			PriorityClassName:             tmpl.PriorityClassName,
			SchedulerName:                 tmpl.SchedulerName,
			SecurityContext:               tmpl.SecurityContext,
			Containers: []corev1.Container{{
				Name: "store", Image: c.Image, ImagePullPolicy: c.ImagePullPolicy,
				Command: []string{"python3", "-c", StoreScript},
				Env: []corev1.EnvVar{
					{Name: "MUSTER_STORE_PORT", Value: strconv.Itoa(int(port))},
					// The agents' run id (PET_RDZV_ID): the store watches
					// that rendezvous to release an exit barrier that waits
					// on an agent that is gone.
					{Name: "MUSTER_RDZV_ID", Value: string(job.UID)},
					{Name: "PYTHONUNBUFFERED", Value: "1"},
				},
				Ports:           []corev1.ContainerPort{{Name: "rendezvous", ContainerPort: port}},
				SecurityContext: c.SecurityContext,
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("128Mi"),
				}},
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
		},
	}
	return pod, nil
}
