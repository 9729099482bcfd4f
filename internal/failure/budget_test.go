package failure

import (
	"testing"

	"k8s.io/utils/ptr"
)

func TestBudgetCharge(t *testing.T) {
	perTask := Budget{Limit: 3, PerTask: ptr.To[int32](1)}
	cases := map[string]struct {
		b           Budget
		accountable bool
		job, task   int32
		want        Charge
	}{
		"room left":                          {Budget{Limit: 3}, true, 2, 0, Allowed},
		"the job's last restart is used":     {Budget{Limit: 3}, true, 3, 0, JobExhausted},
		"a free restart needs no room":       {Budget{Limit: 3}, false, 3, 5, Allowed},
		"a limit of 0 allows none":           {Budget{}, true, 0, 0, JobExhausted},
		"the task's own limit":               {perTask, true, 0, 1, TaskExhausted},
		"the task's limit is checked first":  {perTask, true, 3, 1, TaskExhausted},
		"a role or job restart has no task":  {perTask, true, 0, -1, Allowed},
		"no per-task limit: only the job's":  {Budget{Limit: 3}, true, 0, 100, Allowed},
		"the task has room, the job has not": {perTask, true, 3, 0, JobExhausted},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.b.Charge(tc.accountable, tc.job, tc.task); got != tc.want {
				t.Errorf("Charge(%v, %d, %d) = %d, want %d", tc.accountable, tc.job, tc.task, got, tc.want)
			}
		})
	}
}
