package importer

import (
	"fmt"
	"slices"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// convertVolcano converts a Volcano Job (batch.volcano.sh/v1alpha1): tasks
// become roles, lifecycle policies failure rules, the PodGroup's settings
// a Volcano gang, the plugins a runtime.
func convertVolcano(s *source, _ *inputs) (musterv1.TrainingJobSpec, error) {
	var spec musterv1.TrainingJobSpec
	sp := path{"spec"}
	var taskRules, jobRules []musterv1.FailureRule
	var names []string
	var roleMins []musterv1.RoleScheduling
	for i := range s.list(sp.child("tasks")) {
		tp := sp.child("tasks", i)
		role, mins, rules, err := volcanoTask(s, tp, i)
		if err != nil {
			return spec, err
		}
		spec.Roles = append(spec.Roles, role)
		names = append(names, role.Name)
		roleMins = append(roleMins, mins...)
		taskRules = append(taskRules, rules...)
	}
	if len(spec.Roles) == 0 {
		return spec, fmt.Errorf("spec.tasks: a Volcano Job needs at least one task")
	}
	s.seen(sp.child("tasks"))
	for i := range s.list(sp.child("policies")) {
		if r := volcanoPolicy(s, sp.child("policies", i), ""); r != nil {
			jobRules = append(jobRules, *r)
		}
	}
	s.seen(sp.child("policies"))
	// Volcano checks a task's policies before the job's: so do the rules.
	spec.FailurePolicy.Rules = append(taskRules, jobRules...)

	plugins := vcPlugins{}
	for _, name := range s.keys(sp.child("plugins")) {
		plugins[name] = s.strings(sp.child("plugins", name))
	}
	s.seen(sp.child("plugins"))
	rt, dropped, err := volcanoRuntime(plugins, names)
	if err != nil {
		return spec, err
	}
	for name, why := range dropped {
		s.mention(sp.child("plugins", name), why)
	}
	spec.Runtime = rt
	if rt != nil && rt.MPI != nil {
		spec.Roles = launcherLast(spec.Roles, rt.MPI.LauncherRole)
	}
	if spec.Roles, err = orderRoles(spec.Roles); err != nil {
		return spec, fmt.Errorf("spec.tasks: %w", err)
	}

	if spec.FailurePolicy.BackoffLimit, err = s.int32p(sp.child("maxRetry")); err != nil {
		return spec, err
	}
	if spec.Run.TTLSecondsAfterFinished, err = s.int32p(sp.child("ttlSecondsAfterFinished")); err != nil {
		return spec, err
	}
	if err := volcanoMinSuccess(s, sp.child("minSuccess"), spec.Roles); err != nil {
		return spec, err
	}
	if spec.Scheduling, err = volcanoScheduling(s, sp, roleMins); err != nil {
		return spec, err
	}
	s.drop(sp.child("volumes"), "Muster makes no claims for a job: create them beforehand and mount them in the templates")
	s.drop(sp.child("runningEstimate"), "Muster's gang backends do not take a running estimate")
	s.drop(sp.child("networkTopology"), "Muster's Volcano gang has no network topology constraint: use the templates' affinity")
	return spec, nil
}

// volcanoTask converts one task into a role, with its gang minimum and its
// policies.
func volcanoTask(s *source, tp path, i int) (musterv1.Role, []musterv1.RoleScheduling, []musterv1.FailureRule, error) {
	role := musterv1.Role{Name: s.str(tp.child("name"))}
	if role.Name == "" {
		role.Name = fmt.Sprintf("default%d", i) // Volcano's own default
	}
	n, err := s.replicas(tp.child("replicas"))
	if err != nil {
		return role, nil, nil, err
	}
	role.Replicas = ptr(deref(n))
	role.RestartPolicy = volcanoRestart(s.str(tp.child("template", "spec", "restartPolicy")))
	if err = roleTemplate(s, tp.child("template"), &role); err != nil {
		return role, nil, nil, err
	}
	var mins []musterv1.RoleScheduling
	if m, err := s.int32p(tp.child("minAvailable")); err != nil {
		return role, nil, nil, err
	} else if m != nil && *m >= 1 {
		mins = append(mins, musterv1.RoleScheduling{Name: role.Name, MinAvailable: min(*m, deref(role.Replicas))})
	}
	s.drop(tp.child("maxRetry"), "Volcano counts a task's container restarts for its TaskFailed event; Muster counts each pod's "+
		"restarts against failurePolicy.backoffLimitPerTask, for the whole job")
	s.drop(tp.child("topologyPolicy"), "Muster does not set the kubelet's topology policy per role")
	s.drop(tp.child("partitionPolicy"), "Muster has no task partitions")
	deps := s.strings(tp.child("dependsOn", "name"))
	for _, d := range deps {
		role.DependsOn = append(role.DependsOn, musterv1.Dependency{Role: d, When: musterv1.DependencyRunning})
	}
	if it := s.str(tp.child("dependsOn", "iteration")); it == "any" && len(deps) > 1 {
		s.mention(tp.child("dependsOn", "iteration"), "Muster waits until every role listed runs, not any one of them")
	}
	s.seen(tp.child("dependsOn"))
	var rules []musterv1.FailureRule
	for j := range s.list(tp.child("policies")) {
		if r := volcanoPolicy(s, tp.child("policies", j), role.Name); r != nil {
			rules = append(rules, *r)
		}
	}
	s.seen(tp.child("policies"))
	return role, mins, rules, nil
}

// volcanoRestart is the role's restart policy from the pod's: Volcano
// leaves restarts to the kubelet, whose default is Always; a failed pod
// with restartPolicy Never is not replaced unless a policy says so.
func volcanoRestart(pod string) musterv1.RestartPolicy {
	switch pod {
	case "OnFailure":
		return musterv1.RestartPolicyOnFailure
	case "Never":
		return musterv1.RestartPolicyNever
	}
	return musterv1.RestartPolicyAlways
}

func volcanoPolicy(s *source, pp path, role string) *musterv1.FailureRule {
	pol := vcPolicy{role: role, action: s.str(pp.child("action")), timeout: s.str(pp.child("timeout"))}
	if e := s.str(pp.child("event")); e != "" {
		pol.events = append(pol.events, e)
	}
	pol.events = append(pol.events, s.strings(pp.child("events"))...)
	code, err := s.int32p(pp.child("exitCode"))
	if err != nil {
		s.mention(pp.child("exitCode"), err.Error())
	}
	pol.exitCode = code
	s.seen(pp)
	rule, why := volcanoRule(pol)
	for _, w := range why {
		s.mention(pp, w)
	}
	return rule
}

// volcanoScheduling is the PodGroup Volcano makes for every job: a gang of
// minAvailable in the job's queue, placed by the Volcano scheduler unless
// the job names another.
func volcanoScheduling(s *source, sp path, roleMins []musterv1.RoleScheduling) (musterv1.Scheduling, error) {
	var out musterv1.Scheduling
	sched := s.str(sp.child("schedulerName"))
	minAvailable, err := s.int32p(sp.child("minAvailable"))
	if err != nil {
		return out, err
	}
	queue := s.str(sp.child("queue"))
	out.PriorityClassName = s.str(sp.child("priorityClassName"))
	if sched != "" && sched != "volcano" {
		out.Backend = musterv1.GangNone
		why := fmt.Sprintf("the pods are scheduled by %s, not Volcano: there is no gang", sched)
		for _, f := range []string{"minAvailable", "queue"} {
			s.mention(sp.child(f), why)
		}
		if len(roleMins) > 0 {
			s.mention(sp.child("tasks"), why+": the tasks' minAvailable are not carried over")
		}
		return out, nil
	}
	out.Backend = musterv1.GangVolcano
	out.VolcanoQueue = queue
	out.Roles = roleMins
	if minAvailable != nil && *minAvailable >= 1 {
		out.MinAvailable = *minAvailable
	} else if minAvailable != nil {
		s.mention(sp.child("minAvailable"), "0 is no gang; the gang is every task")
	}
	return out, nil
}

// volcanoMinSuccess is the number of succeeded pods that completes the
// job. Muster counts successes per role, so only a job of one role keeps
// it.
func volcanoMinSuccess(s *source, p path, roles []musterv1.Role) error {
	n, err := s.int32p(p)
	if err != nil || n == nil {
		return err
	}
	if len(roles) != 1 {
		s.mention(p, "Volcano counts successes over all tasks; Muster counts them per role (spec.roles[].completion.minSucceeded)")
		return nil
	}
	roles[0].Completion = &musterv1.CompletionPolicy{MinSucceeded: n}
	return nil
}

// launcherLast moves the MPI launcher after the workers, where Muster
// wants it.
func launcherLast(roles []musterv1.Role, launcher string) []musterv1.Role {
	i := slices.IndexFunc(roles, func(r musterv1.Role) bool { return r.Name == launcher })
	if i < 0 {
		return roles
	}
	r := roles[i]
	return append(slices.Delete(slices.Clone(roles), i, i+1), r)
}
