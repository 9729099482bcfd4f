// Package failure holds the three judgments the operator makes about a
// failure, as pure functions: what kind of failure it was, whether it is
// retried, and what the user asked to happen when it occurs. Nothing here
// reads the cluster, keeps state or changes a package variable; the
// controller observes, calls these, and acts on the answers.
//
// # Classification
//
// Classifier.Classify turns an ended pod (PodEnd, built by PodEndOf) into a
// Completion: a code, a phrase, Succeeded or Failed, and attributes.
// Transient means a retry should end differently (the node was lost),
// Permanent means it would end the same (the command does not exist), and
// neither means unknown. Conflict marks a transient failure caused by
// competing for resources. The user's FailurePatterns are tried before
// Muster's default table, except that a container exiting 200, 201 or 210
// has already said what it hit. CreationErrorOf does the same for errors
// creating a pod. The codes are listed in codes.go.
//
// # Retry
//
// ShouldRetry is FrameworkController's retry algorithm: a few operator-made
// outcomes (a stop, a completed attempt, a scale-down) are never retried;
// with ClassifyFailures, a Transient failure is retried without being
// counted and a Permanent one is never retried; everything else is retried
// while the accountable count is below MaxRetries (Always: every end, even
// success). JobRetryDelay spaces out job-level retries of Transient,
// Conflict failures so that jobs that collided do not collide again at
// once.
//
// # Failure rules
//
// spec.failurePolicy.rules map events (PodFailed, PodEvicted, PodPending,
// TaskCompleted, TaskFailed, PartlyPlaced), exit codes and failure classes
// to an action: restart or fail the task, restart its role or the whole
// job, or end or suspend the job. Match finds the first rule, in order,
// that matches an event; ValidateRules rejects rules that an earlier rule
// makes unreachable.
//
// # How they compose
//
// Package plan composes them for every pod that ends (capabilities
// decisions 1, 2 and 5):
//
//  1. Classify it, looking at the pod and at the failed container that
//     finished first. The Completion is what status shows for the task.
//  2. Match the event against the failure rules. A match chooses the
//     action, and so the granularity of a restart: the task, the role, or
//     the whole job.
//  3. Without a match, the role's restartPolicy decides whether the task
//     is restarted (for ExitCode, the retryable exits of decision 1),
//     refined by the class: a Permanent failure is not restarted under
//     OnFailure or Always, and a Transient one is restarted under every
//     policy but Never. A restart replaces the task's pod, except in the
//     static roles of a PyTorch job, where it restarts the whole job.
//  4. Every restart is counted once in the job's one budget,
//     spec.failurePolicy.backoffLimit, over every task and every path (a
//     pod, a role and a whole-job restart each count one), except
//     Transient failures the infrastructure caused, which do not count when
//     classification is on. backoffLimitPerTask caps each task's counted
//     restarts too.
//  5. When an attempt of the job ends, ShouldRetry with
//     spec.failurePolicy.retry decides whether a new attempt starts; that
//     retry also needs the budget.
package failure
