// Package plan holds every decision the operator makes about a job, as a
// pure function of (job with the status last written, observed pods, clock).
// Nothing here talks to the API server: the controller observes, calls Plan,
// writes the status it returns, and only then carries out the actions it
// returns. Writing first is what makes each decision survive an operator
// crash: a restart is counted in status before the failed pod is deleted,
// so it is neither lost nor counted twice.
//
// # Phases of a plan
//
// Each phase is a function that takes what the earlier ones returned; none
// leaves anything behind for a later one to find. What every phase reads
// and none changes (the job as it runs, the clock, the classifier, the
// observed pods) is one planContext.
//
//  1. Observe (observe.Sort, workingStatus, attachPods): sort the pods into
//     the current attempt's tasks, the rendezvous store, and strays
//     (another attempt, a removed role or index), which removeStrays
//     deletes; expand status into one task per index.
//  2. Job-wide gates (Plan): a finished job only cleans up; Stop ends it;
//     Create holds it; suspend stops it; a delayed attempt waits
//     (holdForDelay); refused creates block or fail it (createFailures).
//  3. Tasks, role by role in spec order (syncRoles): observeRole gives
//     each task its step by what its pod shows; an ended pod is classified
//     (failure.ExitOf, VanishedExit) and decided in one place,
//     failure.Decide: the first matching failure rule, else the role's
//     restart policy. The decision is an action of one table (actions in
//     actiontable.go), which
//     every path shares: a rule, a restart policy, and the TaskCompleted,
//     TaskFailed, PodPending and PartlyPlaced events. The applier then
//     carries the steps and decisions out on the status in task order,
//     folding them into one jobDecision: the job's outcome or restart,
//     decided by the first decision that asks for one. Restarts are charged
//     to the job's budget (failure.Budget).
//  4. Job-level outcomes: the elastic world's minimum (checkElasticSize),
//     then resolve: a new attempt for a restart, else the completion rules,
//     and an outcome is retried (decideRetry) or finishes the job.
//  5. Summarize: counts, phase and conditions derived from the task states,
//     so they never disagree with them; the /scale fields; the short form
//     of each role's tasks.
//
// Actions (creates, deletes, events, a resize) are added to the Result as
// the phases decide them; nothing reads them back to decide anything.
// Two steps only hold creates back once they are decided: an MPI job's
// pods wait until the status they start from names the job's SSH Secret,
// which the plan asks for and then records (awaitSSHSecret), and a gang's
// until its gang object admits them (applyGang).
//
// What a job's spec says about its roles (sizes, scalable and elastic
// roles, the master) is in subpackage topology; the objects a plan asks to
// create are built by subpackage objects.
//
// # Task state machine
//
//	Creating --pod seen--> Pending --pod runs--> Running
//	   ^                      |                     |
//	   |                      +------pod ends-------+
//	   |                                 |
//	   |             failure.Decide (rule, else restart policy)
//	   |            +--------------------+------------------+
//	   |        restart              fail task          succeed task
//	   |            |                    |                  |
//	   +-- gone -- Restarting          Failed            Succeeded   (final)
//
// A restart is written (Restarting, with the ended pod's number) before that
// pod is deleted, and the replacement is created only once it is gone, so a
// task never has two pods. A scale-down marks the tasks it removes
// deletionPending before deleting their pods; they never count again. A
// suspend or the end of the job stops running tasks (Stopped); a resume
// recreates them without counting a restart.
//
// # Job state machine
//
//	Pending <--> Running <--> Restarting        (while it runs)
//	   any of them --suspend--> Suspended --resume--> Pending
//	   any of them --completion rule, failure rule, budget, deadline,
//	                 permanent exit, stop--> Succeeded | Failed   (final)
//
// A failed attempt may be retried (failurePolicy.retry): a new attempt
// recreates every pod. A finished job never creates a pod again.
// docs/state-machine.md has the conditions and reasons of each state.
package plan
