package provider

import (
	"os"
	"testing"

	"github.com/muster-dev/muster/tools/procnode/internal/shim"
)

// TestMain lets the test binary serve as the container shim, as the node's
// own binary does ("muster-procnode shim --spec FILE").
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "shim" {
		shim.Main(os.Args[2:])
		return
	}
	os.Exit(m.Run())
}
