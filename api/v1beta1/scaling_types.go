package v1beta1

// Scaling sizes the job's scalable roles together. The roles share
// spec.scaling.replicas: each gets its minReplicas, and the rest goes one
// task at a time to the role with the fewest tasks per weight that is still
// below its maxReplicas (the earlier role on a tie).
//
// +kubebuilder:validation:XValidation:rule="self.replicas >= self.roles.map(r, has(r.minReplicas) ? r.minReplicas : 1).sum() && self.replicas <= self.roles.map(r, r.maxReplicas).sum()",message="spec.scaling.replicas must lie between the scalable roles' minReplicas and maxReplicas, each summed over spec.scaling.roles"
type Scaling struct {
	// replicas is the number of tasks of the scalable roles together. It
	// is the job's /scale subresource: kubectl scale, a
	// HorizontalPodAutoscaler and the throughput autoscaler change it, and
	// a rescale is safe at any moment (see docs/api.md).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	// +required
	Replicas *int32 `json:"replicas,omitempty"`

	// roles are the scalable roles, with their bounds.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +required
	Roles []ScalingRole `json:"roles,omitempty"`

	// belowMinTimeoutSeconds is how long an elastic world may have fewer
	// than its minReplicas running tasks (workers lost and not yet
	// replaced, pods that cannot be scheduled) before the job fails with
	// reason BelowMinReplicas. The job never fails sooner for a lost
	// worker.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	// +kubebuilder:default=600
	// +optional
	BelowMinTimeoutSeconds int32 `json:"belowMinTimeoutSeconds,omitempty"`

	// autoscaling resizes the scalable roles by measured training
	// throughput.
	// +optional
	Autoscaling AutoscalingPolicy `json:"autoscaling,omitzero"`
}

// ScalingRole bounds one scalable role.
//
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || self.minReplicas <= self.maxReplicas",message="minReplicas must not exceed maxReplicas"
type ScalingRole struct {
	// name of a role in spec.roles.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +required
	Name string `json:"name,omitempty"`

	// minReplicas is the fewest tasks the role may have; an elastic world
	// runs with no fewer than their sum.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	// +kubebuilder:default=1
	// +optional
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// maxReplicas is the most tasks the role may have.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +required
	MaxReplicas int32 `json:"maxReplicas,omitempty"`

	// weight is the role's share of the tasks above every role's minimum
	// (default 1), e.g. 3 on an on-demand pool and 1 on a spot pool.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=1
	// +optional
	Weight int32 `json:"weight,omitempty"`
}

// AutoscalingPolicy resizes the scalable roles by measured training
// throughput: it measures samples per second at each size, grows the roles
// step by step while each added worker pays off, and settles on the best
// size. See docs/autoscaling.md.
type AutoscalingPolicy struct {
	// metric says where the job's throughput, in samples per second for
	// the whole job, comes from.
	// +required
	Metric ThroughputMetric `json:"metric,omitzero"`
	// step is how many workers each step adds.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +kubebuilder:default=1
	// +optional
	Step int32 `json:"step,omitempty"`
	// samplesPerSize is how many samples each size is judged on.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20
	// +kubebuilder:default=3
	// +optional
	SamplesPerSize int32 `json:"samplesPerSize,omitempty"`
	// minGainPercent is how much a step must pay off: each added worker
	// must bring at least this percentage of an average worker's throughput
	// before it.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=50
	// +optional
	MinGainPercent int32 `json:"minGainPercent,omitempty"`
	// settleSeconds is how long after a resize samples are ignored: the
	// world is still re-forming.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	// +kubebuilder:default=30
	// +optional
	SettleSeconds *int32 `json:"settleSeconds,omitempty"`
	// intervalSeconds is how often throughput is read.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	// +kubebuilder:default=10
	// +optional
	IntervalSeconds int32 `json:"intervalSeconds,omitempty"`
}

// ThroughputMetric says where throughput is read: a log line or a metrics
// endpoint.
//
// +kubebuilder:validation:XValidation:rule="has(self.logRegex) != has(self.endpoint)",message="set exactly one of logRegex and endpoint"
// +kubebuilder:validation:MinProperties=1
type ThroughputMetric struct {
	// logRegex is a regular expression whose first group is the job's
	// samples per second, e.g. "samples/s=([0-9.]+)". The newest matching
	// line of the scalable roles' pods' logs is the sample.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +optional
	LogRegex string `json:"logRegex,omitempty"`
	// endpoint is a Prometheus text endpoint every scalable pod serves; the
	// named gauge, summed over the pods, is the sample.
	// +optional
	Endpoint MetricEndpoint `json:"endpoint,omitzero"`
}

// MetricEndpoint is an HTTP endpoint of the training pods.
type MetricEndpoint struct {
	// port the pods serve it on.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +required
	Port int32 `json:"port,omitempty"`
	// path of the endpoint: an absolute path, with no host, query or
	// fragment.
	// +kubebuilder:default=/metrics
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^/[A-Za-z0-9/_.~-]*$`
	// +optional
	Path string `json:"path,omitempty"`
	// name of the gauge, e.g. training_samples_per_second.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[a-zA-Z_:][a-zA-Z0-9_:]*$`
	// +required
	Name string `json:"name,omitempty"`
}
