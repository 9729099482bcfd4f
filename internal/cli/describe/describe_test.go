package describe

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/muster-dev/muster/internal/cli/clitest"
)

func objects() []runtime.Object {
	objs := []runtime.Object{clitest.ElasticJob(), clitest.FailedJob(), clitest.QueuedJob()}
	for _, e := range clitest.ElasticEvents() {
		objs = append(objs, e)
	}
	return objs
}

func TestDescribe(t *testing.T) {
	cases := map[string]struct {
		ns   string
		args []string
	}{
		"elastic":  {args: []string{"pet"}},
		"failed":   {args: []string{"bad"}},
		"queued":   {ns: "research", args: []string{"big"}},
		"two-jobs": {args: []string{"bad", "pet"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := clitest.NewFactory(clitest.Options{}, objects()...)
			if tc.ns != "" {
				f.NS = tc.ns
			}
			r := clitest.Run(t, NewCmd, f, tc.args...)
			if r.Error != nil {
				t.Fatalf("error: %v", r.Error)
			}
			clitest.Golden(t, "describe-"+name, r.Out)
		})
	}
}

func TestDescribeNotFound(t *testing.T) {
	r := clitest.Run(t, NewCmd, clitest.NewFactory(clitest.Options{}), "nope")
	if r.Error == nil || !strings.Contains(r.Error.Error(), "trainingjob team/nope not found") {
		t.Fatalf("got %v", r.Error)
	}
}
