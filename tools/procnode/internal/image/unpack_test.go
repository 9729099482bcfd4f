package image

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// entry is one tar entry of a test layer; the owner defaults to the test's.
type entry struct {
	name, body, link string
	typ              byte
	mode             int64
	uid, gid         int
}

func layer(t *testing.T, entries ...entry) *bytes.Reader {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, Linkname: e.link,
			Uid: os.Getuid(), Gid: os.Getgid(), Size: int64(len(e.body))}
		if e.uid != 0 || e.gid != 0 {
			h.Uid, h.Gid = e.uid, e.gid
		}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
			if h.Typeflag == tar.TypeDir {
				h.Mode = 0o755
			}
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return bytes.NewReader(buf.Bytes())
}

func apply(t *testing.T, root string, layers ...*bytes.Reader) error {
	t.Helper()
	tr, err := openTree(root)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.close()
	for _, l := range layers {
		if err := applyLayer(tr, l); err != nil {
			return err
		}
	}
	return nil
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func TestApplyLayersInOrder(t *testing.T) {
	root := t.TempDir()
	base := layer(t,
		entry{name: "etc/", typ: tar.TypeDir},
		entry{name: "etc/keep", body: "keep"},
		entry{name: "etc/gone", body: "gone"},
		entry{name: "opq/", typ: tar.TypeDir},
		entry{name: "opq/old", body: "old"},
		entry{name: "opq/sub/", typ: tar.TypeDir},
		entry{name: "opq/sub/older", body: "older"},
		entry{name: "bin/tool", body: "#!tool", mode: 0o4755},
		entry{name: "bin/alias", typ: tar.TypeLink, link: "bin/tool"},
		entry{name: "lib", typ: tar.TypeSymlink, link: "/usr/lib"},
		entry{name: "usr/lib/libx.so", body: "x"},
		entry{name: "replaced", body: "a file first"},
	)
	top := layer(t,
		entry{name: "etc/.wh.gone"},
		// The new entry comes before the opaque marker: it must survive it.
		entry{name: "opq/sub/new", body: "new"},
		entry{name: "opq/.wh..wh..opq"},
		entry{name: "opq/mine", body: "mine"},
		// Through the absolute symlink, resolved in the root.
		entry{name: "lib/liby.so", body: "y"},
		entry{name: "replaced/", typ: tar.TypeDir},
		entry{name: "./etc/keep", body: "kept, rewritten"},
	)
	if err := apply(t, root, base, top); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"etc/gone", "opq/old", "opq/sub/older"} {
		if exists(filepath.Join(root, p)) {
			t.Errorf("%s: hidden by a whiteout of the upper layer, still there", p)
		}
	}
	for p, want := range map[string]string{"etc/keep": "kept, rewritten", "opq/mine": "mine", "opq/sub/new": "new", "usr/lib/liby.so": "y", "bin/alias": "#!tool"} {
		if b, err := os.ReadFile(filepath.Join(root, p)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", p, b, err, want)
		}
	}
	var a, b syscall.Stat_t
	if syscall.Stat(filepath.Join(root, "bin/tool"), &a) != nil || syscall.Stat(filepath.Join(root, "bin/alias"), &b) != nil || a.Ino != b.Ino {
		t.Error("bin/alias is not a hard link of bin/tool")
	}
	if st, err := os.Stat(filepath.Join(root, "bin/tool")); err != nil || st.Mode()&os.ModeSetuid == 0 || st.Mode().Perm() != 0o755 {
		t.Errorf("bin/tool mode: %v, %v", st.Mode(), err)
	}
	if l, err := os.Readlink(filepath.Join(root, "lib")); err != nil || l != "/usr/lib" {
		t.Errorf("lib -> %q, %v", l, err)
	}
	if st, err := os.Lstat(filepath.Join(root, "replaced")); err != nil || !st.IsDir() {
		t.Errorf("a directory replaces a file: %v", err)
	}
}

func TestOwnership(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving files other owners needs root (CI runs as root)")
	}
	root := t.TempDir()
	if err := apply(t, root, layer(t,
		entry{name: "home/app/", typ: tar.TypeDir, uid: 65532, gid: 65533},
		entry{name: "home/app/f", body: "x", uid: 65532, gid: 65533, mode: 0o2640},
		entry{name: "home/app/l", typ: tar.TypeSymlink, link: "f", uid: 65532, gid: 65533},
	)); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"home/app", "home/app/f", "home/app/l"} {
		var st syscall.Stat_t
		if err := syscall.Lstat(filepath.Join(root, p), &st); err != nil || st.Uid != 65532 || st.Gid != 65533 {
			t.Errorf("%s owned by %d:%d (%v), want 65532:65533", p, st.Uid, st.Gid, err)
		}
	}
	if st, _ := os.Stat(filepath.Join(root, "home/app/f")); st.Mode()&os.ModeSetgid == 0 || st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v after chown, want setgid 0640", st.Mode())
	}
}

// Nothing an image holds may reach outside the root being unpacked.
func TestEscapesAreRefused(t *testing.T) {
	outside := t.TempDir() // stands for the node's own files
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("node"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string][]*bytes.Reader{
		"dot-dot name":       {layer(t, entry{name: "a/../../escaped", body: "x"})},
		"dot-dot hard link":  {layer(t, entry{name: "h", typ: tar.TypeLink, link: "../" + filepath.Base(outside) + "/secret"})},
		"file via symlink":   {layer(t, entry{name: "out", typ: tar.TypeSymlink, link: outside}), layer(t, entry{name: "out/escaped", body: "x"})},
		"link via symlink":   {layer(t, entry{name: "out", typ: tar.TypeSymlink, link: outside}, entry{name: "h", typ: tar.TypeLink, link: "out/secret"})},
		"whiteout via link":  {layer(t, entry{name: "out", typ: tar.TypeSymlink, link: outside}), layer(t, entry{name: "out/.wh.secret"})},
		"opaque via symlink": {layer(t, entry{name: "out", typ: tar.TypeSymlink, link: outside}), layer(t, entry{name: "out/.wh..wh..opq"})},
	}
	for name, layers := range cases {
		t.Run(name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "rootfs")
			if err := os.Mkdir(root, 0o755); err != nil {
				t.Fatal(err)
			}
			err := apply(t, root, layers...)
			if strings.HasPrefix(name, "dot-dot") && (err == nil || !strings.Contains(err.Error(), "..")) {
				t.Errorf("want the entry refused, got %v", err)
			}
			entries, _ := os.ReadDir(outside)
			if len(entries) != 1 || entries[0].Name() != "secret" {
				t.Fatalf("the layer changed a directory outside the root: %v", entries)
			}
			if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "node" {
				t.Fatal("the layer changed a file outside the root")
			}
			if exists(filepath.Join(filepath.Dir(root), "escaped")) {
				t.Fatal("a file was written next to the root")
			}
			if h, err := os.Lstat(filepath.Join(root, "h")); err == nil {
				var st syscall.Stat_t
				_ = syscall.Stat(filepath.Join(outside, "secret"), &st)
				if h.Sys().(*syscall.Stat_t).Ino == st.Ino {
					t.Fatal("a hard link to a node file was made")
				}
			}
		})
	}
}

func TestCleanEntry(t *testing.T) {
	for in, want := range map[string]string{"./a/b/": "a/b", "/etc/passwd": "etc/passwd", "./": "", "a//b/./c": "a/b/c"} {
		if got, err := cleanEntry(in); err != nil || got != want {
			t.Errorf("cleanEntry(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"../x", "a/../../x", "a/.."} {
		if _, err := cleanEntry(bad); err == nil {
			t.Errorf("cleanEntry(%q) accepted", bad)
		}
	}
}
