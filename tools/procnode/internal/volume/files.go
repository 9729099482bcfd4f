package volume

import (
	"fmt"
	"os"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/muster-dev/muster/tools/procnode/internal/podenv"
)

// File is one file of an API-backed volume, relative to the volume root.
type File struct {
	Path string
	Data []byte
	Mode os.FileMode
}

// TokenSource returns a service-account token for the pod (via the
// TokenRequest API) for the given audience ("" means the API server's own).
type TokenSource func(audience string, expirationSeconds int64) (string, error)

// Source carries what rendering needs besides the volume itself.
type Source struct {
	Pod         *corev1.Pod
	Objects     podenv.Objects
	Addr        podenv.Addresses
	Allocatable corev1.ResourceList
	Token       TokenSource
}

const defaultMode os.FileMode = 0o644

// Files renders a configMap, secret, downwardAPI or projected volume.
func Files(v corev1.Volume, src Source) ([]File, error) {
	var files []File
	var err error
	switch {
	case v.ConfigMap != nil:
		files, err = configMapFiles(src, v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.Optional, mode(v.ConfigMap.DefaultMode, defaultMode))
	case v.Secret != nil:
		files, err = secretFiles(src, v.Secret.SecretName, v.Secret.Items, v.Secret.Optional, mode(v.Secret.DefaultMode, defaultMode))
	case v.DownwardAPI != nil:
		files, err = downwardFiles(src, v.DownwardAPI.Items, mode(v.DownwardAPI.DefaultMode, defaultMode))
	case v.Projected != nil:
		files, err = projectedFiles(src, v.Projected)
	default:
		return nil, fmt.Errorf("volume %q is not API-backed", v.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("volume %q: %w", v.Name, err)
	}
	return files, nil
}

func mode(m *int32, def os.FileMode) os.FileMode {
	if m == nil {
		return def
	}
	return os.FileMode(*m) & os.ModePerm
}

func projectedFiles(src Source, p *corev1.ProjectedVolumeSource) ([]File, error) {
	def := mode(p.DefaultMode, defaultMode)
	var out []File
	for _, s := range p.Sources {
		var files []File
		var err error
		switch {
		case s.ConfigMap != nil:
			files, err = configMapFiles(src, s.ConfigMap.Name, s.ConfigMap.Items, s.ConfigMap.Optional, def)
		case s.Secret != nil:
			files, err = secretFiles(src, s.Secret.Name, s.Secret.Items, s.Secret.Optional, def)
		case s.DownwardAPI != nil:
			files, err = downwardFiles(src, s.DownwardAPI.Items, def)
		case s.ServiceAccountToken != nil:
			t := s.ServiceAccountToken
			exp := int64(3600)
			if t.ExpirationSeconds != nil {
				exp = *t.ExpirationSeconds
			}
			if src.Token == nil {
				return nil, fmt.Errorf("no token source for serviceAccountToken")
			}
			tok, terr := src.Token(t.Audience, exp)
			if terr != nil {
				return nil, fmt.Errorf("serviceAccountToken: %w", terr)
			}
			files = []File{{Path: t.Path, Data: []byte(tok), Mode: def}}
		default:
			return nil, fmt.Errorf("unsupported projected source (only configMap, secret, downwardAPI, serviceAccountToken)")
		}
		if err != nil {
			return nil, err
		}
		out = append(out, files...)
	}
	return out, nil
}

func configMapFiles(src Source, name string, items []corev1.KeyToPath, optional *bool, def os.FileMode) ([]File, error) {
	cm, err := src.Objects.ConfigMap(src.Pod.Namespace, name)
	if err != nil {
		if apierrors.IsNotFound(err) && optional != nil && *optional {
			return nil, nil
		}
		return nil, fmt.Errorf("configMap %s: %w", name, err)
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return keyFiles("configMap "+name, data, items, optional, def)
}

func secretFiles(src Source, name string, items []corev1.KeyToPath, optional *bool, def os.FileMode) ([]File, error) {
	s, err := src.Objects.Secret(src.Pod.Namespace, name)
	if err != nil {
		if apierrors.IsNotFound(err) && optional != nil && *optional {
			return nil, nil
		}
		return nil, fmt.Errorf("secret %s: %w", name, err)
	}
	data := map[string][]byte{}
	for k, v := range s.Data {
		data[k] = v
	}
	for k, v := range s.StringData {
		data[k] = []byte(v)
	}
	return keyFiles("secret "+name, data, items, optional, def)
}

// keyFiles projects all keys, or only the listed items with their paths and
// modes; a listed key that is missing is an error unless optional.
func keyFiles(what string, data map[string][]byte, items []corev1.KeyToPath, optional *bool, def os.FileMode) ([]File, error) {
	var out []File
	if len(items) == 0 {
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, File{Path: k, Data: data[k], Mode: def})
		}
		return out, nil
	}
	for _, it := range items {
		d, ok := data[it.Key]
		if !ok {
			if optional != nil && *optional {
				continue
			}
			return nil, fmt.Errorf("%s has no key %q", what, it.Key)
		}
		out = append(out, File{Path: it.Path, Data: d, Mode: mode(it.Mode, def)})
	}
	return out, nil
}

func downwardFiles(src Source, items []corev1.DownwardAPIVolumeFile, def os.FileMode) ([]File, error) {
	var out []File
	for _, it := range items {
		var val string
		var err error
		switch {
		case it.FieldRef != nil:
			val, err = podenv.FieldValue(src.Pod, it.FieldRef.FieldPath, src.Addr)
		case it.ResourceFieldRef != nil:
			val, err = podenv.ResourceValue(src.Pod, "", it.ResourceFieldRef, src.Allocatable)
		default:
			err = fmt.Errorf("downwardAPI item %q has no source", it.Path)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, File{Path: it.Path, Data: []byte(val), Mode: mode(it.Mode, def)})
	}
	return out, nil
}
