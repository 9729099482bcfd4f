package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics have small, fixed label sets: never a job or pod name.
var (
	podActions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "muster_pod_actions_total",
		Help: "Pod creates, deletes, in-place restarts and releases (tracking finalizer removed) issued by the operator, by action and result.",
	}, []string{"action", "result"})
	taskRestarts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "muster_task_restarts_total",
		Help: "Tasks whose pod the operator decided to replace, by whether the restart counts against the backoff limit.",
	}, []string{"accountable"})
	jobsFinished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "muster_jobs_finished_total",
		Help: "Jobs that finished, by outcome and reason.",
	}, []string{"outcome", "reason"})
	statusWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "muster_status_writes_total",
		Help: "TrainingJob status writes, by result (ok, conflict, error).",
	}, []string{"result"})
	statusDeferred = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "muster_status_writes_deferred_total",
		Help: "Statuses that only showed progress and were left for a later write (--status-batch).",
	})
	expectationWaits = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "muster_expectation_waits_total",
		Help: "Reconciles that waited for the cache to show the operator's own pod writes.",
	})
	cacheWaits = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "muster_pod_cache_waits_total",
		Help: "Plans not acted on because the operator's pod cache showed other pods than the API server (after a start or a take-over, or a pod's labels changed).",
	})
	// The three stages a write of the operator's goes through, timed, so
	// that a slow replacement says whether it waited for a slot, for the
	// API server, or for the status write before it.
	podWriteWaits = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "muster_pod_write_wait_seconds",
		Help:    "How long a pod create, delete or release waited for one of the --pod-create-workers slots.",
		Buckets: latencyBuckets,
	})
	podWriteDurations = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "muster_pod_write_duration_seconds",
		Help:    "How long the API server took to answer a pod create, delete, in-place restart or release, by action.",
		Buckets: latencyBuckets,
	}, []string{"action"})
	statusWriteDurations = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "muster_status_write_duration_seconds",
		Help:    "How long the API server took to answer a TrainingJob status write.",
		Buckets: latencyBuckets,
	})
	// A vector without labels: it has no value, and is not exported,
	// until the operator has worked out what the nodes support.
	nodesRestartInPlaceGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "muster_nodes_restart_in_place",
		Help: "1 when every Ready, schedulable node declares RestartAllContainersOnContainerExits, so that the restart mode Auto restarts in place, else 0; absent when the operator does not follow the nodes (its default restart mode is not Auto, or it may not watch them).",
	}, nil)
)

// latencyBuckets run from 1 ms to 16 s.
var latencyBuckets = prometheus.ExponentialBuckets(0.001, 2, 15)

func init() {
	metrics.Registry.MustRegister(podActions, taskRestarts, jobsFinished, statusWrites, statusDeferred, expectationWaits, cacheWaits, jobs,
		podWriteWaits, podWriteDurations, statusWriteDurations, nodesRestartInPlaceGauge)
}
