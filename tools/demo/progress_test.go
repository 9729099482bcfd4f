package demo

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseEvent(t *testing.T) {
	cases := map[string]struct {
		line   string
		want   Event
		wantOK bool
	}{
		"epoch with torchrun prefix": {"[default0]:event=epoch epoch=3 world=4 loss=0.2653", Event{Name: "epoch", Epoch: 3, World: 4, Loss: "0.2653"}, true},
		"resume":                     {"event=resumed epoch=5 world=2 restart=1", Event{Name: "resumed", Epoch: 5, World: 2, Restart: "1"}, true},
		"other line":                 {"W20261122 socket.cpp:426] [c10d] The server socket", Event{}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := ParseEvent(tc.line)
			if ok != tc.wantOK || got != tc.want {
				t.Errorf("ParseEvent = %+v, %v; want %+v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestProgress(t *testing.T) {
	var p Progress
	for _, e := range []Event{
		{Name: "started", World: 4},
		{Name: "epoch", Epoch: 0, World: 4}, {Name: "epoch", Epoch: 1, World: 4},
		{Name: "resumed", Epoch: 2, World: 2}, {Name: "epoch", Epoch: 2, World: 2},
		{Name: "resumed", Epoch: 3, World: 3}, {Name: "epoch", Epoch: 3, World: 3, Loss: "0.1"},
		{Name: "finished"},
	} {
		p.Observe(e)
	}
	want := Progress{Worlds: []int{4, 2, 3}, Resumes: []int{2, 3}, EpochsAt: []int{2, 1, 1}, LastEpoch: 3, LastLoss: "0.1", Finished: true}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
	if p.World() != 3 || p.EpochsInWorld() != 1 {
		t.Errorf("World %d EpochsInWorld %d", p.World(), p.EpochsInWorld())
	}
}
