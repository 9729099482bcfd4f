package logs

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/joblogs"
)

// jobState is the newest version of the job that the logs command has seen.
type jobState struct {
	mu  sync.Mutex
	job *musterv1.TrainingJob
}

func (s *jobState) set(job *musterv1.TrainingJob) {
	if job == nil {
		return // deleted: keep the last state known
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.job = job
}

// scaledDown is whether the job's status marks a task removed by a
// scale-down (deletion-pending). The operator writes that before it deletes
// the pod, so it is known by the time the pod's shutdown output arrives.
func (s *jobState) scaledDown(role string, index int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.job.Status.Roles {
		if r.Name != role {
			continue
		}
		for _, t := range r.Tasks {
			if t.DeletionPending && index >= int(t.Index) && index < int(t.Index)+int(max(t.Count, 1)) {
				return true
			}
		}
	}
	return false
}

// asideFiles holds the removed pods' output: one file per pod instance in a
// folder made on first use, kept after the command ends.
type asideFiles struct {
	job   string
	dir   string
	files map[types.UID]*os.File
}

// write appends a line to its pod's file; first says the file is new.
func (a *asideFiles) write(l joblogs.Line) (path string, first bool, err error) {
	if a.files == nil {
		a.files = map[types.UID]*os.File{}
	}
	f, ok := a.files[l.UID]
	if !ok {
		first = true
		if a.dir == "" {
			if a.dir, err = os.MkdirTemp("", "muster-logs-"+a.job+"-"); err != nil {
				return "", true, err
			}
		}
		if f, err = os.Create(filepath.Join(a.dir, l.Pod+"-"+string(l.UID)[:min(8, len(l.UID))]+".log")); err != nil {
			return "", true, err
		}
		a.files[l.UID] = f
	}
	_, err = fmt.Fprintln(f, l.Text)
	return f.Name(), first, err
}

func (a *asideFiles) close() {
	for _, f := range a.files {
		_ = f.Close()
	}
}
