package failure

import (
	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
)

// RestartsAsGang is whether a restart that a role's restart policy decides
// restarts the whole job rather than the task's pod; elastic is whether the
// role is elastic. In the static roles of a PyTorch job one lost rank
// breaks the process group of all, and so it does in a TensorFlow,
// PaddlePaddle, MPI or JAX job, whose tasks learn their peers once, when
// they start. In a job placed by a gang scheduler a lone replacement would
// not be placed as part of a gang, and the room its pod left may be taken
// meanwhile: the gang restarts whole and is placed afresh. Elastic roles
// replace their tasks: their world is made to survive a lost member. A
// failure rule with action RestartTask or RestartJob chooses otherwise.
func RestartsAsGang(job *musterv1.TrainingJob, elastic bool) bool {
	if elastic {
		return false
	}
	rt := job.Spec.Runtime
	// A Volcano-style job keeps Volcano's own behaviour: its failure rules
	// (RestartJob on PodFailed, say) decide.
	static := rt != nil && rt.Volcano == nil
	s := job.Status.Scheduling
	ganged := s != nil && s.Backend != "" && s.Backend != musterv1.GangNone
	return static || ganged
}
