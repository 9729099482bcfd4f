// Package failure is Muster's failure model, whole: how a failure is
// classified, what happens next, what a restart costs, and whether a
// finished attempt is retried. Everything here is a pure function of
// values: nothing reads the cluster, keeps state or changes a package
// variable. The planner (package plan) observes, calls these once per
// ended pod, and carries out the answer through its one action table; a
// failed pod's path crosses no other package.
//
// # 1. Classification: what kind of failure was it?
//
// ExitOf turns an ended pod into the ExitStatus that status shows: the
// exit code, reason and message of the failed container that finished
// first (when one process of a job dies the others usually die of it, so
// the first is the cause), and the classifier's Completion of the pod.
// VanishedExit, DisruptedExit and ScaledDownExit do the same for a pod that
// vanished, one deleted by a disruption, one a scale-down removed.
//
// Classifier.Classify gives the Completion: a code, a phrase, Succeeded or
// Failed, and attributes. Transient means a retry should end differently
// (the node was lost), Permanent means it would end the same (the command
// does not exist), and neither means unknown. Conflict marks a transient
// failure caused by competing for resources. The job's classification
// rules are tried before Muster's default table (defaults.go), except that
// a container exiting 200, 201 or 210 has already said what it hit.
// CreationErrorOf does the same for an error creating a pod. The codes are
// listed in codes.go.
//
// # 2. Decision: what happens next?
//
// Decide takes the job's Policy, the task's Role and the pod's End and
// returns a Decision: an action (restart the task, its role or the whole
// job; fail the task or the job; end or suspend the job; or the task
// succeeded) and whether a restart it makes counts against the budget.
//
//  1. The first of spec.failurePolicy.rules that matches the failure
//     decides (Match; ValidateRules refuses rules an earlier one makes
//     unreachable). Rules also match events other than a pod's end:
//     TaskCompleted, TaskFailed, PodPending, PartlyPlaced; the planner
//     raises those and calls Match itself.
//  2. Without a match, the role's restartPolicy decides whether the task
//     restarts, refined by the class: a Permanent failure is not restarted
//     under OnFailure or Always, a Transient one is restarted under every
//     policy but Never, and ExitCode restarts only the exits of a process
//     killed by a signal a retry can survive (130, 137, 138, 143) and OOM
//     kills.
//  3. Such a restart restarts what the role's restartScope says: the whole
//     job (Job, the default: tasks that learn their peers once, a gang) or
//     the task's pod alone (Task: elastic roles, independent tasks).
//
// # 3. Budget: what does a restart cost?
//
// Every restart counts once in the job's one Budget,
// spec.failurePolicy.backoffLimit, over every task and every scope (a pod,
// a role and a whole-job restart each count one), except Transient
// failures the infrastructure caused, which are free while classification
// is on; backoffLimitPerTask caps each task's counted restarts too.
// Budget.Charge says whether a restart still fits.
//
// # 4. Retry: does a finished attempt run again?
//
// When an attempt of the job ends, ShouldRetry with spec.failurePolicy.retry
// decides whether a new attempt starts (FrameworkController's algorithm:
// the operator's own outcomes are never retried; a Transient failure is
// retried without counting, a Permanent one never; otherwise while retries
// are left). A counted retry also needs the budget. JobRetryDelay spaces
// out retries of failures that came from competing for resources, so that
// jobs that collided do not collide again at once.
package failure
