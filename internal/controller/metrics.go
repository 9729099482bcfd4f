package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics have small, fixed label sets: never a job or pod name.
var (
	podActions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "muster_pod_actions_total",
		Help: "Pod creates, deletes and releases (tracking finalizer removed) issued by the operator, by action and result.",
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
)

func init() {
	metrics.Registry.MustRegister(podActions, taskRestarts, jobsFinished, statusWrites, statusDeferred, expectationWaits, jobs)
}
