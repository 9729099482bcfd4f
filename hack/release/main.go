// Command release builds Muster's operator image and cuts releases; `make
// image` and `make release` run it.
//
//	go run ./hack/release image [-out DIR] [-version V] [-push REF]
//	go run ./hack/release release -version vX.Y.Z [-out DIR] [-push] [-registry HOST/PATH]
//	go run ./hack/release crd -out FILE
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/muster-dev/muster/tools/image"
	"github.com/muster-dev/muster/tools/release"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: release image|release [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "image":
		err = buildImage(ctx, os.Args[2:])
	case "release":
		err = cut(ctx, os.Args[2:])
	case "crd":
		err = writeCRD(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: image, release or crd", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

// writeCRD writes the CRD as config/crd renders it (v1beta1 served and
// stored, v1alpha1 not served), for the Helm chart, whose crds/ folder
// Helm installs as it is.
func writeCRD(args []string) error {
	fs := flag.NewFlagSet("crd", flag.ExitOnError)
	out := fs.String("out", "", "file the CRD is written to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	y, err := release.CRDYAML(root())
	if err != nil {
		return err
	}
	return os.WriteFile(*out, y, 0o644)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, ">> "+format+"\n", args...)
}

func root() string {
	wd, _ := os.Getwd()
	return wd
}

func buildImage(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("image", flag.ExitOnError)
	out := fs.String("out", "_output/image", "folder the OCI layout is written to")
	version := fs.String("version", "", "version the image is labelled with (default: the Makefile's, with a v)")
	push := fs.String("push", "", "also push the image to this reference (host/path:tag); a registry on loopback is spoken to over HTTP")
	platforms := fs.String("platforms", "", "comma-separated os/arch list (default linux/amd64,linux/arm64)")
	_ = fs.Parse(args)
	commit, when, err := release.Head(root())
	if err != nil {
		return err
	}
	o := image.Options{Root: root(), Version: *version, Commit: commit, Time: when, Log: logf}
	if *platforms != "" {
		for _, p := range strings.Split(*platforms, ",") {
			os, arch, _ := strings.Cut(p, "/")
			o.Platforms = append(o.Platforms, imagePlatform(os, arch))
		}
	}
	tmp, err := os.MkdirTemp("", "muster-image-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	o.WorkDir = tmp
	start := time.Now()
	r, err := image.Build(ctx, o)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(*out); err != nil {
		return err
	}
	if err := image.WriteLayout(*out, r, o.Version); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*out, "sbom.spdx.json"), r.SBOM, 0o644); err != nil {
		return err
	}
	d, err := r.Index.Digest()
	if err != nil {
		return err
	}
	logf("image %s:%s@%s in %s (OCI layout in %s)", image.Name, o.Version, d, time.Since(start).Round(time.Second), *out)
	if *push != "" {
		ref, err := image.Push(*push, r)
		if err != nil {
			return err
		}
		logf("pushed %s", ref)
	}
	fmt.Println(d.String())
	return nil
}

func cut(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("release", flag.ExitOnError)
	o := release.Options{Root: root(), Log: logf}
	fs.StringVar(&o.Version, "version", "", "the release, vMAJOR.MINOR.PATCH")
	fs.StringVar(&o.Out, "out", "_output/release", "folder the release is written to (emptied first)")
	fs.StringVar(&o.Registry, "registry", "", "registry path the image and chart are named under and pushed to (default "+release.DefaultRegistry+")")
	fs.BoolVar(&o.Push, "push", false, "push the image and the chart to -registry")
	cli := fs.String("cli-platforms", strings.Join(release.CLIPlatforms, ","), "platforms to build the muster CLI for; empty for none")
	_ = fs.Parse(args)
	o.CLIPlatforms = []string{}
	if *cli != "" {
		o.CLIPlatforms = strings.Split(*cli, ",")
	}
	start := time.Now()
	m, err := release.Run(ctx, o)
	if err != nil {
		return err
	}
	logf("release %s in %s: %s (%d files), image %s", m.Version, time.Since(start).Round(time.Second), o.Out, len(m.Files), m.Image)
	return nil
}

func imagePlatform(os, arch string) v1.Platform { return v1.Platform{OS: os, Architecture: arch} }
