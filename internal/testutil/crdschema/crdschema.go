// Package crdschema applies the TrainingJob CRD the way kube-apiserver
// does, in process, for tests of pure logic: the admission tests check the
// webhook behind what the schema and CEL already refuse, and the planner's
// tests check that every status it plans is one the API server would
// store (a status the schema refuses is refused on every write, and the
// job never moves again).
package crdschema

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	runtimeobj "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// APIServer holds one version's schema of the CRD.
type APIServer struct {
	structural *structuralschema.Structural
	schema     apiservervalidation.SchemaValidator
	cel        *cel.Validator
	// status is the schema of status alone: a planner's test checks every
	// status it plans, thousands a second, where the spec does not change.
	status           apiservervalidation.SchemaValidator
	statusStructural *structuralschema.Structural
}

// crdPath is the generated CRD, found from this file so that any package's
// tests can load it.
func crdPath() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "config", "crd", "bases", "muster.dev_trainingjobs.yaml")
}

// Load reads the CRD's schema of the version Muster stores (v1beta1).
func Load(t interface {
	Helper()
	Fatal(...any)
}) *APIServer {
	t.Helper()
	a, err := load(musterv1.GroupVersion.Version)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func load(version string) (*APIServer, error) {
	raw, err := os.ReadFile(crdPath())
	if err != nil {
		return nil, err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		return nil, err
	}
	for _, v := range crd.Spec.Versions {
		if v.Name != version {
			continue
		}
		var internal apiextensionsinternal.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
			return nil, err
		}
		s, err := structuralschema.NewStructural(&internal)
		if err != nil {
			return nil, err
		}
		validator, _, err := apiservervalidation.NewSchemaValidator(&internal)
		if err != nil {
			return nil, err
		}
		statusProps := internal.Properties["status"]
		status, _, err := apiservervalidation.NewSchemaValidator(&statusProps)
		if err != nil {
			return nil, err
		}
		statusStructural := s.Properties["status"]
		if len(statusStructural.XValidations) > 0 {
			return nil, fmt.Errorf("the status schema has CEL rules, which ValidateStatus does not evaluate")
		}
		return &APIServer{structural: s, schema: validator, cel: cel.NewValidator(s, true, celconfig.PerCallLimit),
			status: status, statusStructural: &statusStructural}, nil
	}
	return nil, fmt.Errorf("%s has no version %s", crdPath(), version)
}

// Admit prunes and defaults obj (unstructured JSON) in place and returns
// the schema, list-type and CEL errors, as a create: the API server
// refuses two items of a map list with one key (two roles of one name)
// before any CEL rule or webhook sees the object.
func (a *APIServer) Admit(obj map[string]any) field.ErrorList {
	pruning.Prune(obj, a.structural, true)
	structuraldefaulting.Default(obj, a.structural)
	return a.validate(obj)
}

// ValidateStatus returns what the API server would refuse in the job's
// status: its schema's bounds (lengths, counts, enums, formats) and list
// types. The status schema has no CEL rules (Load checks).
func (a *APIServer) ValidateStatus(status *musterv1.TrainingJobStatus) field.ErrorList {
	obj, err := runtimeobj.DefaultUnstructuredConverter.ToUnstructured(status)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	path := field.NewPath("status")
	errs := apiservervalidation.ValidateCustomResource(path, obj, a.status)
	return append(errs, listtype.ValidateListSetsAndMaps(path, a.statusStructural, obj)...)
}

func (a *APIServer) validate(obj map[string]any) field.ErrorList {
	errs := apiservervalidation.ValidateCustomResource(nil, obj, a.schema)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, a.structural, obj)...)
	celErrs, _ := a.cel.Validate(context.Background(), nil, a.structural, obj, nil, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}
