package crdschema

import (
	"context"
	"os"
	"testing"

	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// runningJob is a job of four workers as the API server stores it once
// they all run (the burst's job of `make bench`), and a copy to stand for
// the object a status write replaces.
func runningJob(b testing.TB) (obj, old map[string]any) {
	raw, err := os.ReadFile("testdata/running-job.json")
	if err != nil {
		b.Fatal(err)
	}
	// This json keeps numbers as int64, as the API server's decoder does:
	// CEL rules that sum counts refuse a float.
	if err := json.Unmarshal(raw, &obj); err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal(raw, &old); err != nil {
		b.Fatal(err)
	}
	return obj, old
}

// BenchmarkStatusWrite measures what the API server spends on a
// TrainingJob's status write beyond what a CRD without Muster's schema
// would: it evaluates every CEL rule of the whole object, the spec's
// included, though a status write cannot change the spec (the errors of
// an unchanged field are ratcheted away only after each rule has run),
// where the schema's own checks look at the status alone.
// docs/benchmarks.md weighs moving the rules into a
// ValidatingAdmissionPolicy that does not match the status subresource.
func BenchmarkStatusWrite(b *testing.B) {
	a, err := load("v1beta1")
	if err != nil {
		b.Fatal(err)
	}
	obj, old := runningJob(b)
	b.Run("CEL rules", func(b *testing.B) {
		for b.Loop() {
			if errs, _ := a.cel.Validate(context.Background(), nil, a.structural, obj, old, celconfig.RuntimeCELCostBudget); len(errs) > 0 {
				b.Fatal(errs)
			}
		}
	})
	b.Run("status schema", func(b *testing.B) {
		for b.Loop() {
			if errs := apiservervalidation.ValidateCustomResource(field.NewPath("status"), obj["status"], a.status); len(errs) > 0 {
				b.Fatal(errs)
			}
		}
	})
}

// The benchmark's job stays one the API server would store, whatever the
// schema becomes.
func TestTheBenchmarksJobIsValid(t *testing.T) {
	a := Load(t)
	obj, old := runningJob(t)
	if errs, _ := a.cel.Validate(context.Background(), nil, a.structural, obj, old, celconfig.RuntimeCELCostBudget); len(errs) > 0 {
		t.Errorf("CEL rules: %v", errs)
	}
	if errs := a.validate(obj); len(errs) > 0 {
		t.Errorf("as a create: %v", errs)
	}
}
