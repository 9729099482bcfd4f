package framework

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/tools/devcluster"
)

const (
	// OperatorNamespace is where every install of Muster (config/dev, the
	// release's install.yaml and chart) runs the operator.
	OperatorNamespace = devcluster.OperatorNamespace
	// OperatorLease is the operator's leader-election Lease there.
	OperatorLease = devcluster.OperatorLease
	// OperatorSelector selects the operator's pods.
	OperatorSelector = "app.kubernetes.io/name=muster-operator"
)

// Dump says what DumpOnFailure logs.
type Dump struct {
	// Namespace holds the jobs to log, each with its pods; none when empty.
	Namespace string
	// Jobs names the jobs to log; all of the namespace's when empty.
	Jobs []string
	// PodStatuses logs, for each job's pod, its Muster labels and
	// annotations and its whole status: what a restart in place is told
	// apart by (restart counts, last ends, conditions).
	PodStatuses bool
	// OperatorLog logs the last lines of the operator's pods' logs.
	OperatorLog bool
}

// operatorLogLines is how much of the operator's log a failure shows: the
// reconciles of the last few seconds, not the whole run.
const operatorLogLines = 300

// DumpOnFailure logs what d names when the test has failed by its end. It
// runs before the cleanups registered earlier, so before those that
// delete the namespace or uninstall the operator.
func (c *Cluster) DumpOnFailure(t *testing.T, d Dump) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if d.Namespace != "" {
			t.Log(DescribeJobs(ctx, c.Client, c.Clientset, d.Namespace, d.Jobs...))
		}
		if d.Namespace != "" && d.PodStatuses {
			t.Log(PodStatuses(ctx, c.Clientset, d.Namespace))
		}
		if d.OperatorLog {
			t.Logf("the operator's log:\n%s", OperatorLog(ctx, c.Clientset, operatorLogLines))
		}
	})
}

// DescribeJobs shows the namespace's jobs (those named, or all) as
// stored, and where each one's pods are.
func DescribeJobs(ctx context.Context, c client.Reader, cs kubernetes.Interface, ns string, names ...string) string {
	var list musterv1.TrainingJobList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return fmt.Sprintf("the jobs in %s: %v", ns, err)
	}
	var b strings.Builder
	for i := range list.Items {
		job := &list.Items[i]
		if len(names) > 0 && !slices.Contains(names, job.Name) {
			continue
		}
		job.ManagedFields = nil
		out, err := yaml.Marshal(job)
		if err != nil {
			out = []byte(err.Error())
		}
		fmt.Fprintf(&b, "job %s/%s:\n%s", ns, job.Name, out)
		pods := DescribePods(cs, ns, metav1.ListOptions{LabelSelector: musterv1.LabelJobName + "=" + job.Name})
		if pods == "" {
			pods = "none\n"
		}
		fmt.Fprintf(&b, "its pods:\n%s", pods)
	}
	if b.Len() == 0 && len(names) == 0 {
		return "no job in " + ns
	}
	if b.Len() == 0 {
		return fmt.Sprintf("no job %s in %s", strings.Join(names, ", "), ns)
	}
	return b.String()
}

// PodStatuses shows each pod of the namespace's jobs with its muster.dev/
// labels and annotations and its status, as stored.
func PodStatuses(ctx context.Context, cs kubernetes.Interface, ns string) string {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: musterv1.LabelJobName})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		shown := map[string]any{"labels": musterKeys(p.Labels), "annotations": musterKeys(p.Annotations), "status": p.Status}
		out, err := yaml.Marshal(shown)
		if err != nil {
			out = []byte(err.Error())
		}
		fmt.Fprintf(&b, "pod %s (uid %s):\n%s", p.Name, p.UID, out)
	}
	return b.String()
}

// musterKeys are the entries of m whose keys begin with muster.dev/.
func musterKeys(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if strings.HasPrefix(k, musterv1.GroupVersion.Group+"/") {
			out[k] = v
		}
	}
	return out
}

// OperatorLog is the last lines of every operator container's log, each
// line marked with its pod and container as kubectl logs --prefix marks
// them.
func OperatorLog(ctx context.Context, cs kubernetes.Interface, lines int64) string {
	pods, err := cs.CoreV1().Pods(OperatorNamespace).List(ctx, metav1.ListOptions{LabelSelector: OperatorSelector})
	if err != nil {
		return err.Error()
	}
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	var out strings.Builder
	for _, p := range pods.Items {
		for _, c := range p.Spec.Containers {
			prefix := fmt.Sprintf("[pod/%s/%s] ", p.Name, c.Name)
			data, err := cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: c.Name, TailLines: &lines}).Do(ctx).Raw()
			if err != nil {
				out.WriteString(prefix + err.Error() + "\n")
				continue
			}
			sc := bufio.NewScanner(bytes.NewReader(data))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				out.WriteString(prefix + sc.Text() + "\n")
			}
		}
	}
	return out.String()
}
