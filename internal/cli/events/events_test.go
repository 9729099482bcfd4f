package events

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/muster-dev/muster/internal/cli/clitest"
)

func TestEvents(t *testing.T) {
	cases := map[string][]string{
		"job":       {"pet"},
		"job-wide":  {"pet", "-o", "wide"},
		"namespace": {},
		"name":      {"pet", "-o", "name"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			objs := []runtime.Object{clitest.ElasticJob(), clitest.FailedJob()}
			for _, e := range clitest.ElasticEvents() {
				objs = append(objs, e)
			}
			r := clitest.Run(t, NewCmd, clitest.NewFactory(clitest.Options{}, objs...), args...)
			if r.Error != nil {
				t.Fatal(r.Error)
			}
			clitest.Golden(t, "events-"+name, r.Out+r.Err)
		})
	}
}

func TestNoEvents(t *testing.T) {
	r := clitest.Run(t, NewCmd, clitest.NewFactory(clitest.Options{}, clitest.ElasticJob()), "pet")
	if r.Error != nil || r.Err != "No events found for trainingjob team/pet.\n" {
		t.Fatalf("got %v, %q", r.Error, r.Err)
	}
}
