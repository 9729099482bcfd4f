package v1beta1

import (
	"cmp"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultProgressPort is where a job's pods serve their training progress
// unless spec.progress.port says otherwise.
const DefaultProgressPort = 28555

// Progress asks the operator to read the training progress the job's
// program reports, and says when a job whose progress stops has stalled.
// The program serves its latest report as JSON from the pod that runs it;
// the operator reads it every intervalSeconds (docs/progress.md).
type Progress struct {
	// port is where the reporting pod serves its report:
	// http://<pod IP>:<port>/progress. The job's containers get it as
	// MUSTER_PROGRESS_PORT.
	// +kubebuilder:default=28555
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port int32 `json:"port,omitempty"`

	// intervalSeconds is how often the operator reads the report. The
	// job's progress costs at most one status write per interval.
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=30
	// +kubebuilder:validation:Maximum=3600
	// +optional
	IntervalSeconds int32 `json:"intervalSeconds,omitempty"`

	// stallSeconds is how long a job that has reported may go without its
	// progress moving: then it is Stalled, with the Stalled condition and
	// the Stalled event that spec.failurePolicy.rules may act on (a hang
	// detector). Unset: a job never stalls.
	// +kubebuilder:validation:Minimum=60
	// +kubebuilder:validation:Maximum=604800
	// +optional
	StallSeconds int32 `json:"stallSeconds,omitempty"`
}

// DefaultProgressInterval is how often a job's progress is read unless
// spec.progress.intervalSeconds says otherwise, in seconds.
const DefaultProgressInterval = 30

// Enabled is whether the job asks for its progress to be read.
func (p *Progress) Enabled() bool { return p != nil }

// ServePort is the port the job's pods serve their progress on: port, or
// its default for a job the API server's defaults never reached.
func (p *Progress) ServePort() int32 { return cmp.Or(p.Port, DefaultProgressPort) }

// ReadInterval is how often the operator reads the job's progress.
func (p *Progress) ReadInterval() time.Duration {
	return time.Duration(cmp.Or(p.IntervalSeconds, DefaultProgressInterval)) * time.Second
}

// ProgressStatus is how far training is, as the job's program last
// reported it, with what the operator derived from the reports.
type ProgressStatus struct {
	// step is the training step reached.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Step *int64 `json:"step,omitempty"`

	// totalSteps is the number of steps training will take.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TotalSteps *int64 `json:"totalSteps,omitempty"`

	// epoch is the epoch reached.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Epoch *int64 `json:"epoch,omitempty"`

	// totalEpochs is the number of epochs training will take.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TotalEpochs *int64 `json:"totalEpochs,omitempty"`

	// percent is how much of training is done, 0 to 100: as reported, else
	// step of totalSteps, else epoch of totalEpochs.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	Percent *int32 `json:"percent,omitempty"`

	// samplesPerSecond is the training throughput last reported, as a
	// decimal number.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +optional
	SamplesPerSecond string `json:"samplesPerSecond,omitempty"`

	// estimatedCompletionTime is when training will be done at the pace
	// between the last two reports that moved it.
	// +optional
	EstimatedCompletionTime *metav1.Time `json:"estimatedCompletionTime,omitempty"`

	// lastProgressTime is when the operator last read a report whose
	// position (step, epoch, percent; for a report without them, anything
	// in it) had moved: a job stalls when it is too long ago.
	// +optional
	LastProgressTime *metav1.Time `json:"lastProgressTime,omitempty"`

	// reporter is the pod that served the report.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Reporter string `json:"reporter,omitempty"`

	// metrics are the latest values of the metrics the program reported
	// (loss, learning rate, ...), at most 16, by name.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Metrics []ProgressMetric `json:"metrics,omitempty"`
}

// ProgressMetric is one reported metric's latest value.
type ProgressMetric struct {
	// name of the metric.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_./-]*$`
	// +required
	Name string `json:"name,omitempty"`

	// value is the metric's value, as a decimal number.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +required
	Value string `json:"value,omitempty"`
}
