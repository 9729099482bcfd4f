package release

import (
	"fmt"
	"path/filepath"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// The operator's Deployment and container, whose image a release pins.
const (
	operatorDeployment = "muster-operator"
	operatorContainer  = "operator"
)

// InstallYAML renders config/production, everything a cluster needs (the
// CRD, the namespace, RBAC, the webhook and its Service, the Deployment),
// with the operator's image set to img (by digest) and the version on the
// Deployment and its pods, as one file for `kubectl apply --server-side -f`.
func InstallYAML(root, img, version string) ([]byte, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(root, "config", "production"))
	if err != nil {
		return nil, fmt.Errorf("kustomize config/production: %w", err)
	}
	if err := pinImage(rm, img, version); err != nil {
		return nil, err
	}
	out, err := rm.AsYaml()
	if err != nil {
		return nil, err
	}
	head := fmt.Sprintf("# Muster %s: kubectl apply --server-side -f install.yaml\n"+
		"# (server-side: the CRD embeds whole pod templates, past client-side apply's annotation limit.)\n---\n", version)
	return append([]byte(head), out...), nil
}

// CRDYAML is the TrainingJob CRD as config/crd renders it.
func CRDYAML(root string) ([]byte, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(root, "config", "crd"))
	if err != nil {
		return nil, fmt.Errorf("kustomize config/crd: %w", err)
	}
	return rm.AsYaml()
}

// pinImage sets the operator container's image and the version labels.
func pinImage(rm resmap.ResMap, img, version string) error {
	found := false
	for _, r := range rm.Resources() {
		if r.GetKind() != "Deployment" || r.GetName() != operatorDeployment {
			continue
		}
		y, err := r.Pipe(yaml.Lookup("spec", "template", "spec", "containers"))
		if err != nil || y == nil {
			return fmt.Errorf("install.yaml: the %s Deployment has no containers", operatorDeployment)
		}
		elems, err := y.Elements()
		if err != nil {
			return err
		}
		for _, c := range elems {
			if yaml.GetValue(c.Field("name").Value) != operatorContainer {
				continue
			}
			if err := c.PipeE(yaml.SetField("image", yaml.NewScalarRNode(img))); err != nil {
				return err
			}
			found = true
		}
		for _, path := range [][]string{{"metadata", "labels"}, {"spec", "template", "metadata", "labels"}} {
			if err := r.PipeE(yaml.LookupCreate(yaml.MappingNode, path...), yaml.SetField("app.kubernetes.io/version", yaml.NewStringRNode(version))); err != nil {
				return err
			}
		}
	}
	if !found {
		return fmt.Errorf("install.yaml: config/production has no %s container in Deployment %s", operatorContainer, operatorDeployment)
	}
	return nil
}
