package get

import (
	"strings"
	"testing"

	"github.com/muster-dev/muster/internal/cli/clitest"
)

func TestGet(t *testing.T) {
	cases := map[string]struct {
		args []string
		ns   string
	}{
		"table":          {},
		"wide":           {args: []string{"-o", "wide"}},
		"all-namespaces": {args: []string{"-A", "-o", "wide"}},
		"no-headers":     {args: []string{"--no-headers"}},
		"one-job":        {args: []string{"pet"}},
		"several-jobs":   {args: []string{"bad", "pet"}},
		"selector":       {args: []string{"-l", "team=vision"}},
		"yaml":           {args: []string{"bad", "-o", "yaml"}},
		"json":           {args: []string{"bad", "-o", "json"}},
		"name":           {args: []string{"-o", "name"}},
		"jsonpath":       {args: []string{"-o", "jsonpath={range .items[*]}{.metadata.name}={.status.phase}{\"\\n\"}{end}"}},
		"custom-columns": {args: []string{"-A", "-o", "custom-columns=NAME:.metadata.name,WORLD:.status.replicas,GANG:.status.scheduling.podGroup"}},
		"empty":          {ns: "nobody"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := clitest.NewFactory(clitest.Options{}, clitest.ElasticJob(), clitest.FailedJob(), clitest.QueuedJob())
			if tc.ns != "" {
				f.NS = tc.ns
			}
			r := clitest.Run(t, NewCmd, f, tc.args...)
			if r.Error != nil {
				t.Fatalf("error: %v\nstderr: %s", r.Error, r.Err)
			}
			clitest.Golden(t, "get-"+name, r.Out+r.Err)
		})
	}
}

func TestGetErrors(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"a job that does not exist":     {args: []string{"nope"}, want: "trainingjob team/nope not found: `muster get -n team` lists the namespace's jobs, `muster get -A` every namespace's"},
		"one of several does not exist": {args: []string{"pet", "nope"}, want: "trainingjob team/nope not found"},
		"names and -A":                  {args: []string{"pet", "-A"}, want: "name jobs or pass -A, not both"},
		"an unknown output":             {args: []string{"-o", "table"}, want: "-o table is not an output format: use one of wide, custom-columns="},
		"a bad custom column":           {args: []string{"-o", "custom-columns=NAME"}, want: `column "NAME" is not HEADER:JSONPATH`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := clitest.NewFactory(clitest.Options{}, clitest.ElasticJob())
			r := clitest.Run(t, NewCmd, f, tc.args...)
			if r.Error == nil || !strings.Contains(r.Error.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", r.Error, tc.want)
			}
		})
	}
}
