package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AutoscalingPolicy resizes the elastic role by measured training
// throughput: it measures samples per second at each size, grows the role
// step by step while each added worker pays off, and settles on the best
// size. See docs/autoscaling.md.
type AutoscalingPolicy struct {
	// metric says where the job's throughput, in samples per second for
	// the whole job, comes from.
	// +required
	Metric ThroughputMetric `json:"metric"`
	// step is how many workers each step adds.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=1
	// +optional
	Step *int32 `json:"step,omitempty"`
	// samplesPerSize is how many samples each size is judged on.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20
	// +kubebuilder:default=3
	// +optional
	SamplesPerSize *int32 `json:"samplesPerSize,omitempty"`
	// minGainPercent: a step pays off when each added worker brings at
	// least this percentage of an average worker's throughput before it.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=50
	// +optional
	MinGainPercent *int32 `json:"minGainPercent,omitempty"`
	// settleSeconds: samples taken this soon after a resize are ignored,
	// the world is still re-forming.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=30
	// +optional
	SettleSeconds *int32 `json:"settleSeconds,omitempty"`
	// intervalSeconds is how often throughput is read.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=10
	// +optional
	IntervalSeconds *int32 `json:"intervalSeconds,omitempty"`
}

// ThroughputMetric says where throughput is read: a log line or a metrics
// endpoint.
//
// +kubebuilder:validation:XValidation:rule="has(self.logRegex) != has(self.endpoint)",message="set exactly one of logRegex and endpoint"
type ThroughputMetric struct {
	// logRegex is a regular expression whose first group is the job's
	// samples per second, e.g. "samples/s=([0-9.]+)". The newest matching
	// line of the elastic role's pods' logs is the sample.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	LogRegex string `json:"logRegex,omitempty"`
	// endpoint is a Prometheus text endpoint every elastic pod serves; the
	// named gauge, summed over the pods, is the sample.
	// +optional
	Endpoint *MetricEndpoint `json:"endpoint,omitempty"`
}

// MetricEndpoint is an HTTP endpoint of the training pods.
type MetricEndpoint struct {
	// port the pods serve it on.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +required
	Port int32 `json:"port"`
	// path of the endpoint.
	// +kubebuilder:default=/metrics
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Path string `json:"path,omitempty"`
	// name of the gauge, e.g. training_samples_per_second.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +required
	Name string `json:"name"`
}

// AutoscalerStatus is what the autoscaler measured and decided.
type AutoscalerStatus struct {
	// phase is Exploring or Stopped.
	// +optional
	Phase string `json:"phase,omitempty"`
	// reason is why it is where it is: Started, ScaledUp, NoGain,
	// PendingPods, ReachedMax, ExternalScale, Disabled.
	// +optional
	Reason string `json:"reason,omitempty"`
	// message says it in words.
	// +optional
	Message string `json:"message,omitempty"`
	// replicas is the size it last asked for.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// lastGood is the best size so far.
	// +optional
	LastGood int32 `json:"lastGood,omitempty"`
	// resizedAt is when it last resized the role.
	// +optional
	ResizedAt *metav1.Time `json:"resizedAt,omitempty"`
	// sizes are the throughputs measured, oldest first.
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +optional
	Sizes []SizeThroughput `json:"sizes,omitempty"`
}

// SizeThroughput is the throughput measured at one size.
type SizeThroughput struct {
	// replicas is the size.
	// +required
	Replicas int32 `json:"replicas"`
	// samples, in samples per second.
	// +kubebuilder:validation:MaxItems=20
	// +listType=atomic
	// +optional
	Samples []string `json:"samples,omitempty"`
	// throughput is the median of the samples.
	// +optional
	Throughput string `json:"throughput,omitempty"`
}
