package plan

import (
	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// takeRestartRequest records spec.run.restartRequest in status as seen and
// says whether it asks for a new attempt now: only a value that changed
// while the job runs does. A value the job was created with (it has not
// started yet) or one seen while it is finished is only recorded; the
// callers that hold a job (suspended, waiting for admission, not started)
// ignore the answer, so a request made meanwhile is recorded too.
func takeRestartRequest(job *musterv1.TrainingJob, st *musterv1.TrainingJobStatus) bool {
	want := job.Spec.Run.RestartRequest
	if want == st.RestartRequest {
		return false
	}
	st.RestartRequest = want
	return st.StartTime != nil && !isFinished(st)
}

// requestedRestart is the new attempt a restart request asks for. It is
// never charged to the backoff limit: nothing failed.
func requestedRestart(job *musterv1.TrainingJob) *jobRestart {
	return &jobRestart{message: "restart requested (spec.run.restartRequest " + job.Spec.Run.RestartRequest + ")"}
}
