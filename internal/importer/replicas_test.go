package importer

import (
	"runtime"
	"strings"
	"testing"
)

// A replica count past the TrainingJob's bound is refused at the source's
// own field, before a converter builds anything per replica: the
// XGBoostJob converter spells every worker's address, so a manifest of a
// few hundred bytes could cost the import hundreds of MiB.
func TestReplicasPastTheBoundAreRefusedBeforeAnythingIsBuiltPerReplica(t *testing.T) {
	in := `apiVersion: kubeflow.org/v1
kind: XGBoostJob
metadata: {name: x}
spec:
  xgbReplicaSpecs:
    Master:
      replicas: 1
      template: {spec: {containers: [{name: c, image: b}]}}
    Worker:
      replicas: 2000000
      template: {spec: {containers: [{name: c, image: b}]}}
`
	docs, err := Parse("in", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = Convert(docs)
	runtime.ReadMemStats(&after)
	if want := "spec.xgbReplicaSpecs.Worker.replicas: 2000000"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want one naming %q", err, want)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
		t.Errorf("the import allocated %d MiB, want under 16", got>>20)
	}
}

// Every kind reads its replica counts through the one bounded reader, so
// each refuses a count past the bound naming its own field.
func TestEveryKindRefusesReplicasPastTheBoundNamingTheField(t *testing.T) {
	tmpl := `{spec: {containers: [{name: c, image: b}]}}`
	trainJob := `apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: rt}
spec: {template: {spec: {replicatedJobs: [{name: node, template: {metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}, spec: {template: ` + tmpl + `}}}]}}}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: j}`
	cases := map[string]struct{ in, field string }{
		"PyTorchJob": {field: "spec.pytorchReplicaSpecs.Worker.replicas", in: `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: j}
spec: {pytorchReplicaSpecs: {Worker: {replicas: 10001, template: ` + tmpl + `}}}`},
		"MPIJob": {field: "spec.mpiReplicaSpecs.Worker.replicas", in: `apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: j}
spec: {mpiReplicaSpecs: {Launcher: {replicas: 1, template: ` + tmpl + `}, Worker: {replicas: 10001, template: ` + tmpl + `}}}`},
		"Volcano Job": {field: "spec.tasks[0].replicas", in: `apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: j}
spec: {tasks: [{name: w, replicas: 10001, template: ` + tmpl + `}]}`},
		"Framework": {field: "spec.taskRoles[0].taskNumber", in: `apiVersion: frameworkcontroller.microsoft.com/v1
kind: Framework
metadata: {name: j}
spec: {executionType: Start, taskRoles: [{name: w, taskNumber: 10001, task: {pod: ` + tmpl + `}}]}`},
		"PyTorchTrainingJob": {field: "spec.replicaSpecs[0].replicas", in: `apiVersion: batch.tensorstack.dev/v1beta1
kind: PyTorchTrainingJob
metadata: {name: j}
spec: {replicaSpecs: [{type: worker, replicas: 10001, template: ` + tmpl + `}]}`},
		"the elastic bounds": {field: "spec.elasticPolicy.maxReplicas", in: `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: j}
spec: {elasticPolicy: {minReplicas: 1, maxReplicas: 2000000}, pytorchReplicaSpecs: {Worker: {replicas: 1, template: ` + tmpl + `}}}`},
		"TrainJob": {field: "spec.trainer.numNodes", in: trainJob + `
spec: {runtimeRef: {name: rt}, trainer: {numNodes: 10001}}`},
		"a TrainingRuntime's replicated job": {field: "spec.template.spec.replicatedJobs[1]", in: `apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: rt}
spec: {template: {spec: {replicatedJobs: [
  {name: init, template: {metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: dataset-initializer}}, spec: {template: ` + tmpl + `}}},
  {name: node, replicas: 101, template: {metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}, spec: {parallelism: 100, template: ` + tmpl + `}}}]}}}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: j}
spec: {runtimeRef: {name: rt}}`},
	}
	for name, c := range cases {
		docs, err := Parse("in", strings.NewReader(c.in))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Convert(docs); err == nil || !strings.Contains(err.Error(), c.field+": ") || !strings.Contains(err.Error(), "10000") {
			t.Errorf("%s: error %v, want one naming %s and the bound", name, err, c.field)
		}
	}
}
