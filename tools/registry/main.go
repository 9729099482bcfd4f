// Command muster-registry is the local cluster's OCI registry: the process
// node pulls images from it, and muster-dev pushes the operator's image to
// it. It serves the OCI distribution API (go-containerregistry's registry,
// with the referrers API) over plain HTTP on a loopback address, and keeps
// what is pushed to it in a folder, so a restart loses nothing.
//
//	muster-registry --listen 127.0.0.1:16500 --dir DIR
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/muster-dev/muster/tools/registry/store"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:16500", "address to serve on; must be loopback: the registry has no authentication")
	dir := flag.String("dir", "", "folder blobs and manifests are kept in (required)")
	flag.Parse()
	if err := run(*listen, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "muster-registry:", err)
		os.Exit(1)
	}
}

func run(listen, dir string) error {
	if dir == "" {
		return fmt.Errorf("--dir is required")
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("--listen %q: %w", listen, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--listen %q: the registry has no authentication and serves loopback only", listen)
	}
	h, err := store.Handler(dir, log.New(os.Stderr, "", log.LstdFlags))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
		<-sig
		_ = srv.Close()
	}()
	log.Printf("serving an OCI registry on http://%s, storing in %s", listen, dir)
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}
