package main

import (
	"strings"
	"testing"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/controller"
	"github.com/muster-dev/muster/internal/plan"
)

func TestDefaultRestartModeFlag(t *testing.T) {
	cases := map[string]struct {
		value   string
		want    plan.InPlaceSupport
		wantErr string
	}{
		"Auto":      {value: "Auto", want: plan.InPlaceSupport{WatcherImage: "img", Default: controller.RestartModeAuto}},
		"InPlace":   {value: "InPlace", want: plan.InPlaceSupport{WatcherImage: "img", Default: musterv1.RestartModeInPlace}},
		"Recreate":  {value: "Recreate", want: plan.InPlaceSupport{WatcherImage: "img", Default: musterv1.RestartModeRecreate}},
		"lowercase": {value: "auto", wantErr: `--default-restart-mode must be Auto, InPlace or Recreate, not "auto"`},
		"empty":     {value: "", wantErr: `--default-restart-mode must be Auto, InPlace or Recreate, not ""`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := inPlaceSupport(restartFlags{watcherImage: "img", defaultMode: tc.value})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("inPlaceSupport = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
