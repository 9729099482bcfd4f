package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidatePolicies(t *testing.T) {
	secs := func(s int32) *int32 { return &s }
	ev := func(events ...Event) []Event { return events }
	roles := []string{"master", "worker"}
	cases := map[string]struct {
		policies []Policy
		want     []string
	}{
		"none": {nil, nil},
		"the Volcano PaddlePaddle example": {[]Policy{
			{Events: ev(EventPodEvicted), Action: ActionRestartJob},
			{Events: ev(EventPodFailed), Action: ActionRestartJob},
			{Role: "worker", Events: ev(EventTaskCompleted), Action: ActionCompleteJob},
		}, nil},
		"every action and event": {[]Policy{
			{Events: ev(EventPodFailed, EventPodEvicted), Action: ActionRestartPod},
			{Events: ev(EventPodPending), Action: ActionRestartPod, TimeoutSeconds: secs(600)},
			{Events: ev(EventTaskFailed), Action: ActionRestartRole},
			{Events: ev(EventUnknown), Action: ActionRestartJob},
			{Events: ev(EventTaskCompleted), Action: ActionCompleteJob},
			{Role: "master", Events: ev(EventTaskFailed), Action: ActionFailJob},
			{Role: "master", Events: ev(EventTaskCompleted), Action: ActionTerminateJob},
			{Role: "worker", Events: ev(EventUnknown), Action: ActionSuspendJob},
			{Role: "worker", Events: ev(EventPodEvicted), Action: ActionResumeJob},
		}, nil},
		"the same trigger in different scopes": {[]Policy{
			{Events: ev(EventPodFailed), Action: ActionRestartJob},
			{Role: "worker", Events: ev(EventPodFailed), Action: ActionRestartPod},
			{Role: "master", Events: ev(EventPodFailed), Action: ActionFailJob},
		}, nil},
		"exit codes before PodFailed": {[]Policy{
			{ExitCodes: []int32{137, 143}, Action: ActionRestartPod},
			{Events: ev(EventPodFailed), Action: ActionFailJob},
		}, nil},
		"* alone in its scope": {[]Policy{
			{Role: "worker", Events: ev(EventAny), Action: ActionRestartRole},
			{Events: ev(EventPodFailed), Action: ActionFailJob},
		}, nil},
		"neither events nor exit codes": {[]Policy{{Action: ActionFailJob}},
			[]string{"FieldValueRequired spec.policies[0]"}},
		"both events and exit codes": {[]Policy{{Events: ev(EventPodFailed), ExitCodes: []int32{1}, Action: ActionFailJob}},
			[]string{"FieldValueForbidden spec.policies[0].exitCodes"}},
		"both, after PodFailed: one error, not a second about reachability": {[]Policy{
			{Events: ev(EventPodFailed), Action: ActionFailJob},
			{Events: ev(EventPodEvicted), ExitCodes: []int32{1}, Action: ActionFailJob},
		}, []string{"FieldValueForbidden spec.policies[1].exitCodes"}},
		"exit code 0": {[]Policy{{ExitCodes: []int32{1, 0}, Action: ActionFailJob}},
			[]string{"FieldValueInvalid spec.policies[0].exitCodes[1]"}},
		"unknown event": {[]Policy{{Events: ev("PodExploded"), Action: ActionFailJob}},
			[]string{"FieldValueNotSupported spec.policies[0].events[0]"}},
		"PodRunning is not a policy event": {[]Policy{{Events: ev(EventPodRunning), Action: ActionFailJob}},
			[]string{"FieldValueNotSupported spec.policies[0].events[0]"}},
		"missing action": {[]Policy{{Events: ev(EventPodFailed)}},
			[]string{"FieldValueRequired spec.policies[0].action"}},
		"unknown action": {[]Policy{{Events: ev(EventPodFailed), Action: "AbortJob"}},
			[]string{"FieldValueNotSupported spec.policies[0].action"}},
		"unknown role": {[]Policy{{Role: "ps", Events: ev(EventPodFailed), Action: ActionFailJob}},
			[]string{"FieldValueNotFound spec.policies[0].role"}},
		"RestartPod on a task event": {[]Policy{{Events: ev(EventTaskFailed), Action: ActionRestartPod}},
			[]string{"FieldValueInvalid spec.policies[0].action"}},
		"RestartPod on *": {[]Policy{{Events: ev(EventAny), Action: ActionRestartPod}},
			[]string{"FieldValueInvalid spec.policies[0].action"}},
		"RestartPod on exit codes": {[]Policy{{ExitCodes: []int32{137}, Action: ActionRestartPod}}, nil},
		"RestartRole on Unknown": {[]Policy{{Events: ev(EventUnknown), Action: ActionRestartRole}},
			[]string{"FieldValueInvalid spec.policies[0].action"}},
		"PodPending without a timeout": {[]Policy{{Events: ev(EventPodPending), Action: ActionRestartJob}},
			[]string{"FieldValueRequired spec.policies[0].timeoutSeconds"}},
		"a zero timeout": {[]Policy{{Events: ev(EventPodFailed), Action: ActionRestartJob, TimeoutSeconds: secs(0)}},
			[]string{"FieldValueInvalid spec.policies[0].timeoutSeconds"}},
		"a timeout on another event": {[]Policy{{Events: ev(EventPodEvicted), Action: ActionRestartJob, TimeoutSeconds: secs(30)}}, nil},
		"duplicate event in one policy": {[]Policy{{Events: ev(EventPodFailed, EventPodFailed), Action: ActionRestartJob}},
			[]string{"FieldValueDuplicate spec.policies[0].events[1]"}},
		"duplicate event across policies": {[]Policy{
			{Role: "worker", Events: ev(EventPodFailed), Action: ActionRestartJob},
			{Role: "worker", Events: ev(EventPodEvicted, EventPodFailed), Action: ActionRestartJob},
		}, []string{"FieldValueDuplicate spec.policies[1].events[1]"}},
		"duplicate exit code": {[]Policy{
			{ExitCodes: []int32{1, 2}, Action: ActionFailJob},
			{ExitCodes: []int32{2}, Action: ActionFailJob},
		}, []string{"FieldValueDuplicate spec.policies[1].exitCodes[0]"}},
		"contradictory events": {[]Policy{
			{Events: ev(EventPodEvicted), Action: ActionRestartJob},
			{Events: ev(EventPodEvicted), Action: ActionFailJob},
		}, []string{"FieldValueInvalid spec.policies[1].events[0]"}},
		"contradictory exit codes": {[]Policy{
			{Role: "master", ExitCodes: []int32{137}, Action: ActionRestartPod},
			{Role: "master", ExitCodes: []int32{137}, Action: ActionFailJob},
		}, []string{"FieldValueInvalid spec.policies[1].exitCodes[0]"}},
		"* with another policy in its scope": {[]Policy{
			{Events: ev(EventAny), Action: ActionRestartJob},
			{ExitCodes: []int32{1}, Action: ActionFailJob},
		}, []string{"FieldValueInvalid spec.policies[0].events[0]"}},
		"* with another event in its policy": {[]Policy{{Events: ev(EventPodFailed, EventAny), Action: ActionRestartJob}},
			[]string{"FieldValueInvalid spec.policies[0].events[1]"}},
		"* twice": {[]Policy{
			{Role: "worker", Events: ev(EventAny), Action: ActionRestartRole},
			{Role: "worker", Events: ev(EventAny), Action: ActionRestartRole},
		}, []string{"FieldValueDuplicate spec.policies[1].events[0]", "FieldValueInvalid spec.policies[0].events[0]"}},
		"an exit-code policy hidden by PodFailed": {[]Policy{
			{Role: "worker", Events: ev(EventPodFailed), Action: ActionRestartPod},
			{Role: "worker", ExitCodes: []int32{1}, Action: ActionFailJob},
		}, []string{"FieldValueInvalid spec.policies[1].exitCodes"}},
		"errors of several kinds together": {[]Policy{
			{Role: "ps", Events: ev(EventPodPending, "Nope"), Action: "Explode"},
		}, []string{
			"FieldValueNotFound spec.policies[0].role",
			"FieldValueNotSupported spec.policies[0].events[1]",
			"FieldValueNotSupported spec.policies[0].action",
			"FieldValueRequired spec.policies[0].timeoutSeconds",
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := errStrings(ValidatePolicies(tc.policies, roles, field.NewPath("spec", "policies")))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ValidatePolicies (-want +got):\n%s", diff)
			}
		})
	}
}
