package importer

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/validation"
)

// converter turns one source document into a TrainingJob's spec. It reads
// the fields it maps through s, and reports through s what it drops.
type converter func(s *source, in *inputs) (musterv1.TrainingJobSpec, error)

type kind struct{ group, kind string }

type format struct {
	version string
	convert converter
	// annotationPrefixes are the source system's own annotations: they
	// drive features of that system, so they are dropped, not copied.
	annotationPrefixes []string
}

// formats are the kinds import converts, each in the versions it reads.
var formats = map[kind][]format{
	{"frameworkcontroller.microsoft.com", "Framework"}: {{version: "v1", convert: convertFramework}},
	{"training.kubedl.io", "PyTorchJob"}:               {{version: "v1alpha1", convert: convertKubeDL, annotationPrefixes: []string{"kubedl.io/"}}},
	{"kubeflow.org", "PyTorchJob"}:                     {{version: "v1", convert: convertPyTorchJob}},
	{"kubeflow.org", "TFJob"}:                          {{version: "v1", convert: convertTFJob}},
	{"kubeflow.org", "XGBoostJob"}:                     {{version: "v1", convert: convertXGBoostJob}},
	{"kubeflow.org", "JAXJob"}:                         {{version: "v1", convert: convertJAXJob}},
	{"kubeflow.org", "PaddleJob"}:                      {{version: "v1", convert: convertPaddleJob}},
	{"kubeflow.org", "MPIJob"}:                         {{version: "v1", convert: convertMPIJobV1}, {version: "v2beta1", convert: convertMPIJobV2}},
	{"trainer.kubeflow.org", "TrainJob"}:               {{version: "v1alpha1", convert: convertTrainJob}},
	{"batch.volcano.sh", "Job"}:                        {{version: "v1alpha1", convert: convertVolcano}},
	{"batch.tensorstack.dev", "PyTorchTrainingJob"}:    {{version: "v1beta1", convert: convertT9k}},
	{"elastic.pytorch.org", "ElasticJob"}:              {{version: "v1alpha1", convert: convertElasticJob}},
}

// Runtimes of Kubeflow Trainer are not jobs: a TrainJob refers to one.
var runtimeKinds = map[kind]bool{
	{"trainer.kubeflow.org", "TrainingRuntime"}:        true,
	{"trainer.kubeflow.org", "ClusterTrainingRuntime"}: true,
}

// Kinds lists the kinds Convert takes, for messages and help.
func Kinds() []string {
	var out []string
	for k, fs := range formats {
		for _, f := range fs {
			out = append(out, fmt.Sprintf("%s (%s/%s)", k.kind, k.group, f.version))
		}
	}
	sort.Strings(out)
	return out
}

// inputs is what a converter may look up besides its own document: the
// runtimes given alongside it.
type inputs struct {
	doc      Document
	runtimes map[string]Document // "<kind>/<namespace>/<name>"
}

func runtimeKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

// Convert converts every job document of docs. The runtimes a TrainJob
// refers to must be among docs. Any document that cannot be converted is
// an error naming it; the others are still converted and returned.
func Convert(docs []Document) ([]Result, error) {
	in := &inputs{runtimes: map[string]Document{}}
	for _, d := range docs {
		if k, ok := splitKind(d); ok && runtimeKinds[k] {
			ns := d.Namespace()
			if k.kind == "ClusterTrainingRuntime" {
				ns = ""
			}
			in.runtimes[runtimeKey(k.kind, ns, d.Name())] = d
		}
	}
	var results []Result
	var errs []error
	for _, d := range docs {
		k, _ := splitKind(d)
		if runtimeKinds[k] {
			continue
		}
		r, err := convertOne(d, in)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		results = append(results, r)
	}
	return results, errors.Join(errs...)
}

func splitKind(d Document) (kind, bool) {
	group, version, found := strings.Cut(d.APIVersion(), "/")
	if !found {
		group, version = "", group
	}
	_ = version
	return kind{group: group, kind: d.Kind()}, d.Kind() != ""
}

func convertOne(d Document, in *inputs) (Result, error) {
	k, _ := splitKind(d)
	fs, ok := formats[k]
	if !ok {
		return Result{}, fmt.Errorf("%s: kind %q of apiVersion %q is not one muster import converts; it converts %s",
			d.Source, d.Kind(), d.APIVersion(), strings.Join(Kinds(), ", "))
	}
	v := strings.TrimPrefix(d.APIVersion(), k.group+"/")
	i := slices.IndexFunc(fs, func(f format) bool { return f.version == v })
	if i < 0 {
		versions := make([]string, len(fs))
		for j, f := range fs {
			versions[j] = k.group + "/" + f.version
		}
		return Result{}, fmt.Errorf("%s: %s of apiVersion %q: muster import reads %s", d.Source, d.Kind(), d.APIVersion(), strings.Join(versions, " or "))
	}
	f := fs[i]
	s := newSource(d.Object)
	s.use(path{"apiVersion"})
	s.use(path{"kind"})
	meta, err := metadata(s, f.annotationPrefixes)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", d.Source, err)
	}
	s.drop(path{"status"}, "the source's observed state: the TrainingJob starts afresh")
	in.doc = d
	spec, err := f.convert(s, in)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %s %s: %w", d.Source, d.Kind(), meta.Name, err)
	}
	setRestartScopes(&spec)
	job := &musterv1.TrainingJob{ObjectMeta: meta, Spec: spec}
	job.APIVersion, job.Kind = musterv1.GroupVersion.String(), "TrainingJob"
	if err := check(job); err != nil {
		return Result{}, fmt.Errorf("%s: %s %s: %w", d.Source, d.Kind(), meta.Name, err)
	}
	return Result{Source: d.Source, Kind: d.Kind(), Job: job, Dropped: s.report()}, nil
}

// check refuses a job the API server or the webhook would refuse for its
// names, and runs the webhook's own checks, so that a job import writes is
// one that can be created.
func check(job *musterv1.TrainingJob) error {
	var errs field.ErrorList
	errs = append(errs, checkNames(job)...)
	errs = append(errs, validation.ValidateCreate(job)...)
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return fmt.Errorf("the TrainingJob would be invalid: %s", strings.Join(msgs, "; "))
}
