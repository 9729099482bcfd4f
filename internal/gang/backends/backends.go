// Package backends makes the adapters of the gang backends an operator is
// configured to drive.
package backends

import (
	"fmt"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/gang"
	"github.com/muster-dev/muster/internal/gang/coscheduling"
	"github.com/muster-dev/muster/internal/gang/native"
	"github.com/muster-dev/muster/internal/gang/volcano"
)

// Options name the second schedulers' profiles.
type Options struct {
	CoschedulingSchedulerName string
	VolcanoSchedulerName      string
}

// New makes the adapters of the enabled backends.
func New(enabled []musterv1.GangBackend, o Options) (map[musterv1.GangBackend]gang.Backend, error) {
	out := map[musterv1.GangBackend]gang.Backend{}
	for _, b := range enabled {
		switch b {
		case musterv1.GangNative:
			out[b] = native.Backend{}
		case musterv1.GangCoscheduling:
			out[b] = coscheduling.Backend{SchedulerName: or(o.CoschedulingSchedulerName, coscheduling.DefaultSchedulerName)}
		case musterv1.GangVolcano:
			out[b] = volcano.Backend{SchedulerName: or(o.VolcanoSchedulerName, volcano.DefaultSchedulerName)}
		default:
			return nil, fmt.Errorf("gang backend %q cannot be enabled: want Native, Coscheduling or Volcano", b)
		}
	}
	return out, nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
