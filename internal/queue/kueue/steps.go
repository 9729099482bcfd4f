package kueue

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// JobState is what the job's controller knows of the job, for Decide.
type JobState struct {
	// Finished and Failed: the job has ended, and how.
	Finished, Failed bool
	// Message says why it ended.
	Message string
	// Running is whether every task that should run does.
	Running bool
	// Active is whether any of the job's pods may still run.
	Active bool
	// LeftQueue: the job's queue-name label was removed, so its Workload
	// no longer stands for it.
	LeftQueue bool
}

// Step is what a job's controller does next with the job's Workload.
type Step int

// Steps, at most one per reconcile.
const (
	StepNone Step = iota
	// StepCreate makes the Workload.
	StepCreate
	// StepReplace deletes a Workload that no longer describes the job,
	// once the job's pods are gone; the next reconcile makes it anew.
	StepReplace
	// StepFinish marks the Workload Finished, which releases its quota.
	StepFinish
	// StepRequeue hands an evicted job's quota back once its pods are
	// gone, so Kueue queues it again.
	StepRequeue
	// StepPodsReady reports whether the admitted job's pods all run, for
	// waitForPodsReady.
	StepPodsReady
	// StepResize sets an elastic job's Workload's counts to the job's: a
	// scale-down, or any change before admission.
	StepResize
	// StepSlice asks for a grown elastic job's new slice.
	StepSlice
	// StepResizeSlice sets the pending slice's counts to the job's.
	StepResizeSlice
	// StepDropSlice deletes a pending slice the job no longer needs.
	StepDropSlice
	// StepFinishReplaced finishes the Workload an admitted slice replaces.
	StepFinishReplaced
)

// Decide is the next step for a job's Workload. exists says whether it
// exists, matches whether it still describes the job.
func Decide(exists bool, st State, matches bool, job JobState) Step {
	switch {
	case !exists:
		if job.Finished {
			return StepNone
		}
		return StepCreate
	case job.Finished || job.LeftQueue:
		if st.Finished {
			return StepNone
		}
		return StepFinish
	case !matches:
		if job.Active {
			return StepNone // the job is being stopped; its Workload goes after its pods
		}
		return StepReplace
	case st.Evicted:
		if st.QuotaReserved && !job.Active {
			return StepRequeue
		}
		return StepNone
	case st.Admitted && st.PodsReady != job.Running:
		return StepPodsReady
	}
	return StepNone
}

// StatusEdit is the change a step makes to the Workload's status, nil for
// a step that changes no status.
func StatusEdit(step Step, st State, job JobState, now metav1.Time) func(status map[string]any) {
	switch step {
	case StepFinish:
		reason, msg := "Succeeded", job.Message
		switch {
		case job.LeftQueue && !job.Finished:
			reason, msg = "LeftQueue", "the job's "+LabelQueueName+" label was removed"
		case job.Failed:
			reason = "Failed"
		}
		return func(s map[string]any) { setCondition(s, Condition(CondFinished, true, reason, msg, now)) }
	case StepFinishReplaced:
		return func(s map[string]any) {
			setCondition(s, Condition(CondFinished, true, ReasonSliceReplaced, "replaced by the job's admitted slice", now))
		}
	case StepRequeue:
		return func(s map[string]any) {
			delete(s, "admission")
			setCondition(s, Condition(CondQuotaReserved, false, "Pending", st.Message, now))
			setCondition(s, Condition(CondAdmitted, false, "NoReservation", "the job was evicted", now))
			setCondition(s, Condition(CondRequeued, st.Reason == "Preempted", st.Reason, st.Message, now))
		}
	case StepPodsReady:
		reason, msg := "WaitForStart", "not all pods are running"
		if job.Running {
			reason, msg = "Started", "all pods are running"
		}
		return func(s map[string]any) { setCondition(s, Condition(CondPodsReady, job.Running, reason, msg, now)) }
	}
	return nil
}

// setCondition sets one condition in a Workload's status, keeping its
// transition time when its status does not change.
func setCondition(status map[string]any, c map[string]any) {
	conds, _ := status["conditions"].([]any)
	for i, existing := range conds {
		m, _ := existing.(map[string]any)
		if m["type"] != c["type"] {
			continue
		}
		if m["status"] == c["status"] {
			c["lastTransitionTime"] = m["lastTransitionTime"]
		}
		conds[i] = c
		status["conditions"] = conds
		return
	}
	status["conditions"] = append(conds, c)
}
