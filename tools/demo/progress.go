package demo

import (
	"strconv"
	"strings"
)

// Event is one key=value line the example's train.py prints, e.g.
// "event=epoch epoch=3 world=4 loss=0.2653".
type Event struct {
	Name    string
	Epoch   int
	World   int
	Loss    string
	Restart string
}

// ParseEvent reads an event from a log line, which torchrun may prefix with
// the worker's name ("[default0]:"). ok is false for any other line.
func ParseEvent(line string) (Event, bool) {
	i := strings.Index(line, "event=")
	if i < 0 {
		return Event{}, false
	}
	var e Event
	for _, field := range strings.Fields(line[i:]) {
		k, v, found := strings.Cut(field, "=")
		if !found {
			continue
		}
		switch k {
		case "event":
			e.Name = v
		case "epoch":
			e.Epoch, _ = strconv.Atoi(v)
		case "world":
			e.World, _ = strconv.Atoi(v)
		case "loss":
			e.Loss = v
		case "restart":
			e.Restart = v
		}
	}
	return e, e.Name != ""
}

// Progress is what the demo has seen of the training so far.
type Progress struct {
	// Worlds are the world sizes training ran with, in order, each once
	// per change.
	Worlds []int
	// Resumes are the epochs each new world resumed from a checkpoint at.
	Resumes []int
	// LastEpoch and LastLoss are from the newest epoch line.
	LastEpoch int
	LastLoss  string
	// EpochsAt counts the epochs finished at each position of Worlds.
	EpochsAt []int
	Finished bool
}

// Observe folds one event into the progress.
func (p *Progress) Observe(e Event) {
	switch e.Name {
	case "resumed":
		p.Resumes = append(p.Resumes, e.Epoch)
	case "finished":
		p.Finished = true
	case "epoch":
		if n := len(p.Worlds); n == 0 || p.Worlds[n-1] != e.World {
			p.Worlds = append(p.Worlds, e.World)
			p.EpochsAt = append(p.EpochsAt, 0)
		}
		p.EpochsAt[len(p.EpochsAt)-1]++
		p.LastEpoch, p.LastLoss = e.Epoch, e.Loss
	}
}

// World is the current world size, 0 before the first epoch.
func (p Progress) World() int {
	if len(p.Worlds) == 0 {
		return 0
	}
	return p.Worlds[len(p.Worlds)-1]
}

// EpochsInWorld is how many epochs the current world has finished.
func (p Progress) EpochsInWorld() int {
	if len(p.EpochsAt) == 0 {
		return 0
	}
	return p.EpochsAt[len(p.EpochsAt)-1]
}
