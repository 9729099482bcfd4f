package podenv

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestExpand(t *testing.T) {
	vars := MapLookup(map[string]string{"A": "1", "B": "two", "EMPTY": ""})
	cases := map[string]string{
		"plain":          "plain",
		"$(A)":           "1",
		"x$(A)y$(B)z":    "x1ytwoz",
		"$(MISSING)":     "$(MISSING)",
		"$$(A)":          "$(A)",
		"$$":             "$",
		"cost $5":        "cost $5",
		"trailing $":     "trailing $",
		"$(A":            "$(A",
		"$(EMPTY)-":      "-",
		"$()":            "$()",
		"$(A)$(A)$$$(B)": "11$two",
	}
	for in, want := range cases {
		if got := Expand(in, vars); got != want {
			t.Errorf("Expand(%q) = %q, want %q", in, got, want)
		}
	}
}

type objs struct {
	cms     map[string]*corev1.ConfigMap
	secrets map[string]*corev1.Secret
}

func (o objs) ConfigMap(ns, name string) (*corev1.ConfigMap, error) {
	if cm, ok := o.cms[ns+"/"+name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (o objs) Secret(ns, name string) (*corev1.Secret, error) {
	if s, ok := o.secrets[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func testPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u-1",
			Labels: map[string]string{"app": "x", "b": "y"}, Annotations: map[string]string{"note": "hi"}},
		Spec: corev1.PodSpec{NodeName: "node", ServiceAccountName: "sa",
			Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}}}}},
	}
}

func TestBuild(t *testing.T) {
	pod := testPod()
	tru := true
	c := &pod.Spec.Containers[0]
	c.EnvFrom = []corev1.EnvFromSource{
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
		{Prefix: "S_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}}},
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: &tru}},
	}
	c.Env = []corev1.EnvVar{
		{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "HOST", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
		{Name: "APP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
		{Name: "SA", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.serviceAccountName"}}},
		{Name: "CPU", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}},
		{Name: "MEM", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
		{Name: "KEY", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "k1"}}},
		{Name: "GONE", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}, Key: "nope", Optional: &tru}}},
		{Name: "URL", Value: "http://$(IP):$(PORT)/$(KUBERNETES_SERVICE_HOST)"},
		{Name: "PORT", Value: "80"},
		{Name: "k1", Value: "override"},
	}
	in := Input{
		Pod:         pod,
		Addr:        Addresses{PodIP: "10.244.0.5", HostIP: "127.0.0.1"},
		Allocatable: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
		Service:     []Var{{"KUBERNETES_SERVICE_HOST", "127.0.0.1"}, {"PORT", "ignored"}},
		Objects: objs{
			cms:     map[string]*corev1.ConfigMap{"ns/cm": {Data: map[string]string{"k1": "v1", "bad key": "x"}}},
			secrets: map[string]*corev1.Secret{"ns/sec": {Data: map[string][]byte{"pw": []byte("s3")}}},
		},
	}
	got, err := Build(c, in)
	if err != nil {
		t.Fatal(err)
	}
	want := []Var{
		{"k1", "override"}, {"S_pw", "s3"}, {"POD", "p"}, {"IP", "10.244.0.5"}, {"HOST", "127.0.0.1"},
		{"APP", "x"}, {"SA", "sa"}, {"CPU", "2"}, {"MEM", "2048"}, {"KEY", "v1"},
		{"URL", "http://10.244.0.5:ignored/127.0.0.1"}, {"PORT", "80"},
		{"KUBERNETES_SERVICE_HOST", "127.0.0.1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Build:\n got %v\nwant %v", got, want)
	}
	args := ExpandArgs([]string{"echo", "$(POD)", "$(NOPE)", "$$(POD)"}, got)
	if want := []string{"echo", "p", "$(NOPE)", "$(POD)"}; !reflect.DeepEqual(args, want) {
		t.Errorf("ExpandArgs = %v, want %v", args, want)
	}
}

func TestBuildMissingRequired(t *testing.T) {
	pod := testPod()
	c := &pod.Spec.Containers[0]
	c.Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "missing"}, Key: "k"}}}}
	if _, err := Build(c, Input{Pod: pod, Objects: objs{}}); err == nil {
		t.Fatal("expected an error for a missing required secret")
	}
}

func TestFormatMap(t *testing.T) {
	got := FormatMap(map[string]string{"b": "2", "a": `q"x`})
	if want := "a=\"q\\\"x\"\nb=\"2\""; got != want {
		t.Errorf("FormatMap = %q, want %q", got, want)
	}
}
