package plan

import (
	"slices"
	"testing"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

// maxFuzzSteps bounds one fuzzed lifetime: long enough for several
// restarts and a retry, short enough for many lifetimes a second.
const maxFuzzSteps = 300

// inPlaceBit of the first byte makes the fuzzed job restart in place.
const inPlaceBit = 0x80

// FuzzJobLifetime is TestSimulation with the fuzzer choosing: the first
// byte picks the job, and whether it restarts in place (its high bit, as
// TestInPlaceSimulation), and every later byte makes one choice of the
// simulation (which event, which pod, which exit code, whether the
// operator crashes before or after writing status). The lifetime lasts as
// long as the input does, so the fuzzer explores longer lifetimes by
// growing it. The invariants are TestSimulation's; the pods end with
// reasons and messages longer than status may hold.
func FuzzJobLifetime(f *testing.F) {
	jobs := simJobs()
	names := make([]string, 0, len(jobs))
	for name := range jobs {
		names = append(names, name)
	}
	slices.Sort(names)
	for i := range names {
		// Every job with a few steps of each kind of event, re-created
		// and in place.
		for _, inPlace := range []byte{0, inPlaceBit} {
			f.Add(append([]byte{byte(i) | inPlace}, []byte("\x00\x40\x00\x80\x00\xc0\x10\x90\x30\x70\xa0\xd0\xf0\x20\x60")...))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		job := jobs[names[int(data[0]&^inPlaceBit)%len(names)]]
		rnd, src := testutil.FuzzRand(data[1:])
		s := &sim{world: newWorld(t, job.DeepCopy()), rnd: rnd, longText: true}
		if data[0]&inPlaceBit != 0 {
			s.inPlace = InPlaceSupport{WatcherImage: "muster:sim", Default: musterv1.RestartModeInPlace}
		}
		s.run(maxFuzzSteps, src.Exhausted)
	})
}
