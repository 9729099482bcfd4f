package procstat

import (
	"os"
	"testing"
)

func TestParseCountsFieldsFromTheLastParenthesis(t *testing.T) {
	// A command name with a space and a parenthesis of its own.
	line := "4242 (my (odd) cmd) S 1 4242 4242 0 -1 4194560 100 0 0 0 7 5 0 0 20 0 1 0 98765 1000 10 18446744073709551615\n"
	s, err := parse(line)
	if err != nil {
		t.Fatal(err)
	}
	if s.State != "S" || s.Started != "98765" || s.CPUTicks != 12 {
		t.Errorf("got %+v, want state S, started 98765, 12 ticks", s)
	}
	if !s.Alive() {
		t.Error("a sleeping process counts as dead")
	}
	zombie, err := parse("7 (x) Z 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0 0")
	if err != nil || zombie.Alive() {
		t.Errorf("a zombie counts as alive: %+v %v", zombie, err)
	}
}

func TestParseRejectsWhatIsNotAStatLine(t *testing.T) {
	for _, line := range []string{"", "12 no parenthesis S 1", "1 (short) S 1 2 3"} {
		if s, err := parse(line); err == nil {
			t.Errorf("%q parsed as %+v", line, s)
		}
	}
}

func TestReadOwnProcess(t *testing.T) {
	s, err := Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !s.Alive() || s.Started == "" {
		t.Errorf("own process: %+v", s)
	}
	if _, err := Read(-1); err == nil {
		t.Error("no error for a pid that cannot exist")
	}
}
