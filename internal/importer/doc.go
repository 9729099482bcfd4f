// Package importer converts the manifests of other training systems into
// TrainingJobs that behave the same: FrameworkController Frameworks, KubeDL
// and Kubeflow PyTorchJobs, Kubeflow TrainJobs with their runtimes, Volcano
// Jobs, T9k PyTorchTrainingJobs and torchelastic ElasticJobs.
//
// Sources are read as unstructured documents, never through the other
// projects' Go types: each converter reads only the fields it maps, and
// every other field of the document is reported as dropped with the reason,
// so nothing is lost silently. A converter is a set of small decisions, each
// a pure function from the source's values to the TrainingJob's values and
// the fields it could not carry over.
//
// docs/import.md is the mapping table, field by field.
package importer
