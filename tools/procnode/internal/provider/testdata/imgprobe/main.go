// Command imgprobe runs inside a container started from a test image and
// reports what it sees as one JSON line: "report" prints and exits,
// "sleep" waits to be killed (for kubectl exec into it).
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

type report struct {
	UID, GID int
	Cwd      string
	Env      map[string]string
	Exists   map[string]bool
	// Errors of writing to /, to the volume at /data and to /tmp ("" when
	// the write worked).
	WriteRoot, WriteData, WriteTmp string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "sleep" {
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM)
		<-c
		return
	}
	r := report{UID: os.Getuid(), GID: os.Getgid(), Env: map[string]string{}, Exists: map[string]bool{}}
	r.Cwd, _ = os.Getwd()
	for _, k := range []string{"PATH", "IMAGE_VAR", "OVERRIDE", "HOME", "KUBERNETES_SERVICE_HOST"} {
		r.Env[k] = os.Getenv(k)
	}
	for _, p := range []string{"/image-marker", "/bin/imgprobe", "/gone.txt", "/opq/old", "/opq/new", "/proc/self/status", "/dev/null", "/etc/hosts", os.Getenv("HOST_ONLY")} {
		_, err := os.Lstat(p)
		r.Exists[p] = err == nil
	}
	write := func(p string) string {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			return err.Error()
		}
		return ""
	}
	r.WriteRoot = write("/written-by-container")
	r.WriteData = write("/data/written-by-container")
	r.WriteTmp = write("/tmp/written-by-container")
	b, _ := json.Marshal(r)
	fmt.Println(string(b))
}
