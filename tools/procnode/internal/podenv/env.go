package podenv

import (
	"fmt"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Objects gives access to the ConfigMaps and Secrets a container refers to.
// Errors for missing objects must satisfy apierrors.IsNotFound so that
// optional references can be skipped.
type Objects interface {
	ConfigMap(namespace, name string) (*corev1.ConfigMap, error)
	Secret(namespace, name string) (*corev1.Secret, error)
}

// Var is one resolved environment variable, kept in a slice so the order the
// user wrote is preserved.
type Var struct{ Name, Value string }

// Input is everything Build needs besides the container itself.
type Input struct {
	Pod         *corev1.Pod
	Addr        Addresses
	Allocatable corev1.ResourceList
	// Service holds variables the node injects (KUBERNETES_SERVICE_HOST…).
	// They may be referenced with $(VAR) and lose to the container's own env.
	Service []Var
	Objects Objects
}

var envNameRE = regexp.MustCompile(`^[-._a-zA-Z][-._a-zA-Z0-9]*$`)

// Build resolves a container's envFrom and env in the kubelet's order:
// envFrom sources first, then env entries (each may reference earlier ones
// and the service variables), then service variables not overridden.
func Build(c *corev1.Container, in Input) ([]Var, error) {
	var out []Var
	vals := map[string]string{}
	set := func(name, value string) {
		if _, ok := vals[name]; !ok {
			out = append(out, Var{Name: name})
		}
		vals[name] = value
	}
	service := map[string]string{}
	for _, v := range in.Service {
		service[v.Name] = v.Value
	}

	for _, src := range c.EnvFrom {
		data, err := envFromData(in, src)
		if err != nil {
			return nil, err
		}
		for _, k := range sortedKeys(data) {
			name := src.Prefix + k
			if !envNameRE.MatchString(name) {
				continue // the kubelet skips invalid names too (with an event)
			}
			set(name, data[k])
		}
	}

	lookup := MapLookup(vals, service)
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, Expand(e.Value, lookup))
			continue
		}
		v, skip, err := valueFrom(c, in, e.ValueFrom)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		if !skip {
			set(e.Name, v)
		}
	}
	for _, v := range in.Service {
		if _, ok := vals[v.Name]; !ok {
			set(v.Name, v.Value)
		}
	}
	for i := range out {
		out[i].Value = vals[out[i].Name]
	}
	return out, nil
}

func envFromData(in Input, src corev1.EnvFromSource) (map[string]string, error) {
	ns := in.Pod.Namespace
	switch {
	case src.ConfigMapRef != nil:
		cm, err := in.Objects.ConfigMap(ns, src.ConfigMapRef.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && isTrue(src.ConfigMapRef.Optional) {
				return nil, nil
			}
			return nil, fmt.Errorf("envFrom configMap %s: %w", src.ConfigMapRef.Name, err)
		}
		return cm.Data, nil
	case src.SecretRef != nil:
		s, err := in.Objects.Secret(ns, src.SecretRef.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && isTrue(src.SecretRef.Optional) {
				return nil, nil
			}
			return nil, fmt.Errorf("envFrom secret %s: %w", src.SecretRef.Name, err)
		}
		data := map[string]string{}
		for k, v := range s.Data {
			data[k] = string(v)
		}
		for k, v := range s.StringData {
			data[k] = v
		}
		return data, nil
	}
	return nil, nil
}

// valueFrom resolves one env source; skip reports an optional reference that
// is absent, which leaves the variable unset like the kubelet does.
func valueFrom(c *corev1.Container, in Input, vf *corev1.EnvVarSource) (value string, skip bool, err error) {
	ns := in.Pod.Namespace
	switch {
	case vf.FieldRef != nil:
		v, err := FieldValue(in.Pod, vf.FieldRef.FieldPath, in.Addr)
		return v, false, err
	case vf.ResourceFieldRef != nil:
		v, err := ResourceValue(in.Pod, c.Name, vf.ResourceFieldRef, in.Allocatable)
		return v, false, err
	case vf.ConfigMapKeyRef != nil:
		ref := vf.ConfigMapKeyRef
		cm, err := in.Objects.ConfigMap(ns, ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && isTrue(ref.Optional) {
				return "", true, nil
			}
			return "", false, fmt.Errorf("configMap %s: %w", ref.Name, err)
		}
		if v, ok := cm.Data[ref.Key]; ok {
			return v, false, nil
		}
		if v, ok := cm.BinaryData[ref.Key]; ok {
			return string(v), false, nil
		}
		if isTrue(ref.Optional) {
			return "", true, nil
		}
		return "", false, fmt.Errorf("key %q not found in configMap %s", ref.Key, ref.Name)
	case vf.SecretKeyRef != nil:
		ref := vf.SecretKeyRef
		s, err := in.Objects.Secret(ns, ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && isTrue(ref.Optional) {
				return "", true, nil
			}
			return "", false, fmt.Errorf("secret %s: %w", ref.Name, err)
		}
		if v, ok := s.Data[ref.Key]; ok {
			return string(v), false, nil
		}
		if v, ok := s.StringData[ref.Key]; ok {
			return v, false, nil
		}
		if isTrue(ref.Optional) {
			return "", true, nil
		}
		return "", false, fmt.Errorf("key %q not found in secret %s", ref.Key, ref.Name)
	}
	return "", false, fmt.Errorf("unsupported valueFrom")
}

// ExpandArgs expands $(VAR) in command and args using the final environment.
func ExpandArgs(args []string, env []Var) []string {
	m := make(map[string]string, len(env))
	for _, v := range env {
		m[v.Name] = v.Value
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = Expand(a, MapLookup(m))
	}
	return out
}

func isTrue(b *bool) bool { return b != nil && *b }
