package podenv

import (
	"fmt"
	"math"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Addresses are the pod's runtime addresses, known only to the node; the
// downward API reads them instead of the (not yet written) pod status.
type Addresses struct {
	PodIP  string
	HostIP string
}

// FieldValue resolves a downward-API field path for the pod. It handles the
// status fields itself because the pod status in the API lags behind the
// node's own view when containers start.
func FieldValue(pod *corev1.Pod, path string, addr Addresses) (string, error) {
	if key, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[key], nil
	}
	if key, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[key], nil
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return FormatMap(pod.Labels), nil
	case "metadata.annotations":
		return FormatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return addr.PodIP, nil
	case "status.hostIP", "status.hostIPs":
		return addr.HostIP, nil
	}
	return "", fmt.Errorf("unsupported fieldRef %q", path)
}

// subscript parses paths such as metadata.labels['app'].
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"['")
	if !ok || !strings.HasSuffix(rest, "']") {
		return "", false
	}
	return strings.TrimSuffix(rest, "']"), true
}

// FormatMap renders labels or annotations the way downward-API files show
// them: sorted key="value" lines.
func FormatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s=%q", k, m[k])
	}
	return b.String()
}

// ResourceValue resolves a resourceFieldRef. Unset limits fall back to the
// node's allocatable amount, as on a real kubelet.
func ResourceValue(pod *corev1.Pod, defaultContainer string, ref *corev1.ResourceFieldSelector, allocatable corev1.ResourceList) (string, error) {
	name := ref.ContainerName
	if name == "" {
		name = defaultContainer
	}
	c := findContainer(pod, name)
	if c == nil {
		return "", fmt.Errorf("resourceFieldRef: container %q not found", name)
	}
	kind, res, ok := strings.Cut(ref.Resource, ".")
	if !ok {
		return "", fmt.Errorf("unsupported resourceFieldRef %q", ref.Resource)
	}
	var list corev1.ResourceList
	switch kind {
	case "limits":
		list = c.Resources.Limits
	case "requests":
		list = c.Resources.Requests
	default:
		return "", fmt.Errorf("unsupported resourceFieldRef %q", ref.Resource)
	}
	q, ok := list[corev1.ResourceName(res)]
	if !ok {
		if kind == "limits" {
			q, ok = allocatable[corev1.ResourceName(res)]
		}
		if !ok {
			q = resource.Quantity{}
		}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if res == string(corev1.ResourceCPU) {
		v := math.Ceil(float64(q.MilliValue()) / float64(divisor.MilliValue()))
		return fmt.Sprintf("%d", int64(v)), nil
	}
	v := math.Ceil(float64(q.Value()) / float64(divisor.Value()))
	return fmt.Sprintf("%d", int64(v)), nil
}

func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}
