package chart

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/strvals"
)

var (
	releasedChart = regexp.MustCompile(`^oci://[^ ]+/charts/muster$`)
	chartVersion  = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)
)

// docsWithCommands are the documents whose helm commands
// TestDocsHelmCommands checks.
var docsWithCommands = []string{"docs/install.md", "README.md"}

// TestDocsHelmCommands: every helm command in the docs' sh blocks names the
// chart and a namespace, and its --set values parse as the helm CLI
// parses them and render.
func TestDocsHelmCommands(t *testing.T) {
	seen := 0
	for _, doc := range docsWithCommands {
		for _, cmd := range shellCommands(t, doc) {
			args := shellWords(cmd)
			for _, a := range args {
				if strings.HasPrefix(a, "charts/") {
					if _, err := os.Stat(filepath.Join(root, a)); err != nil {
						t.Errorf("%s: %q names %s, which does not exist", doc, cmd, a)
					}
				}
			}
			if args[0] != "helm" {
				continue
			}
			seen++
			sub := args[1]
			if !slices.Contains([]string{"install", "upgrade", "template", "lint", "uninstall"}, sub) {
				t.Errorf("%s: %q: unexpected helm command %s", doc, cmd, sub)
				continue
			}
			if sub == "lint" || sub == "uninstall" {
				continue
			}
			// A release's chart, pulled from a registry, is charts/muster
			// packaged (tools/release).
			if len(args) < 4 || args[2] != "muster" || (args[3] != "charts/muster" && !releasedChart.MatchString(args[3])) {
				t.Errorf("%s: %q does not install charts/muster (or a release's oci://.../charts/muster) as release muster", doc, cmd)
			}
			vals := map[string]any{}
			ns := ""
			for i := 4; i < len(args); i++ {
				switch args[i] {
				case "-n", "--namespace":
					i++
					ns = args[i]
				case "--set":
					i++
					if err := strvals.ParseInto(args[i], vals); err != nil {
						t.Errorf("%s: %q: --set %s: %v", doc, cmd, args[i], err)
					}
				case "--create-namespace", "--plain-http":
				case "--version":
					i++
					if !strings.HasPrefix(args[3], "oci://") || !chartVersion.MatchString(args[i]) {
						t.Errorf("%s: %q: --version %s: a chart version (X.Y.Z) of a chart from a registry", doc, cmd, args[i])
					}
				default:
					t.Errorf("%s: %q: unexpected argument %s", doc, cmd, args[i])
				}
			}
			if ns != namespace {
				t.Errorf("%s: %q installs into %q, the docs' namespace is %s", doc, cmd, ns, namespace)
			}
			if _, err := renderErr(t, vals); err != nil {
				t.Errorf("%s: %q does not render: %v", doc, cmd, err)
			}
		}
	}
	if seen == 0 {
		t.Error("no helm command found in the docs")
	}
}

// shellCommands are the commands of a Markdown file's sh blocks, with
// continuation lines joined.
func shellCommands(t *testing.T, doc string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, doc))
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	in, cur := false, ""
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "```sh"):
			in = true
		case strings.HasPrefix(line, "```"):
			in = false
		case in:
			line = strings.TrimSpace(line)
			if i := strings.Index(line, " #"); i >= 0 {
				line = strings.TrimSpace(line[:i])
			}
			if strings.HasSuffix(line, "\\") {
				cur += strings.TrimSuffix(line, "\\")
				continue
			}
			if line = cur + line; line != "" {
				cmds = append(cmds, line)
			}
			cur = ""
		}
	}
	return cmds
}

// shellWords splits a command line as a shell does, for the quoting the
// docs use (single and double quotes, no escapes).
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	var quote rune
	has := false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, has = r, true
		case r == ' ' || r == '\t':
			if has || cur.Len() > 0 {
				words = append(words, cur.String())
				cur.Reset()
				has = false
			}
		default:
			cur.WriteRune(r)
		}
	}
	if has || cur.Len() > 0 {
		words = append(words, cur.String())
	}
	return words
}
