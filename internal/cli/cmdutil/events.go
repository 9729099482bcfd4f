package cmdutil

import (
	"context"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/cli/printers"
)

// JobEvents are the events about the job itself, oldest first. With
// children, also those about the objects Muster makes for it: its task
// pods, its rendezvous store, its Service and its gang objects.
func JobEvents(ctx context.Context, cs kubernetes.Interface, job *musterv1.TrainingJob, children bool) ([]corev1.Event, error) {
	opts := metav1.ListOptions{}
	if !children {
		// The server filters; the check below keeps fakes and old servers
		// honest.
		opts.FieldSelector = fields.Set{"involvedObject.name": job.Name, "involvedObject.kind": "TrainingJob"}.String()
	}
	list, err := cs.CoreV1().Events(job.Namespace).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	keep := JobEventFilter(job, children)
	var out []corev1.Event
	for i := range list.Items {
		if keep(&list.Items[i]) {
			out = append(out, list.Items[i])
		}
	}
	SortEvents(out)
	return out, nil
}

// JobEventFilter is whether an event is about the job or, with children,
// about one of the objects Muster makes for it.
func JobEventFilter(job *musterv1.TrainingJob, children bool) func(*corev1.Event) bool {
	own := ownedName(job)
	return func(e *corev1.Event) bool {
		o := e.InvolvedObject
		if o.Kind == "TrainingJob" {
			return o.Name == job.Name
		}
		return children && own(o.Name)
	}
}

// SortEvents orders events oldest first.
func SortEvents(events []corev1.Event) {
	slices.SortStableFunc(events, func(a, b corev1.Event) int {
		return printers.EventTime(&a).Compare(printers.EventTime(&b))
	})
}

// ownedName is whether an object's name is one Muster gives the job's
// objects: <job> (Service, Workload), <job>-<role>-<index> (task pods),
// <job>-store and <job>-<attempt> (gang objects).
func ownedName(job *musterv1.TrainingJob) func(string) bool {
	roles := make([]string, 0, len(job.Spec.Roles))
	for _, r := range job.Spec.Roles {
		roles = append(roles, regexp.QuoteMeta(r.Name))
	}
	re := regexp.MustCompile("^" + regexp.QuoteMeta(job.Name) + `(-(` + strings.Join(append(roles, "store"), "|") + `)(-[0-9]+)?|-[0-9]+)?$`)
	return re.MatchString
}
