package image

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// User is who a container runs as.
type User struct {
	UID, GID int64
	// Groups are the supplementary groups the image's /etc/group gives the
	// user (by name), as container runtimes add them.
	Groups []int64
	// Home is the user's home in the image's /etc/passwd, "/" if unknown.
	Home string
}

type passwdEntry struct {
	name     string
	uid, gid int64
	home     string
}

// ResolveUser resolves an image's User ("", "uid", "uid:gid", "name",
// "name:group") against the image's own /etc/passwd and /etc/group, the
// way container runtimes do: a numeric uid not in passwd runs with gid 0,
// a name that is not there is an error.
func ResolveUser(rootfs, spec string) (*User, error) {
	userPart, groupPart, hasGroup := strings.Cut(spec, ":")
	if userPart == "" {
		userPart = "0"
	}
	users, _ := readPasswd(rootfs)
	u := &User{Home: "/"}
	var entry *passwdEntry
	if id, err := strconv.ParseInt(userPart, 10, 64); err == nil {
		u.UID = id
		entry = findUser(users, func(e passwdEntry) bool { return e.uid == id })
	} else {
		entry = findUser(users, func(e passwdEntry) bool { return e.name == userPart })
		if entry == nil {
			return nil, fmt.Errorf("unable to find user %s: no matching entries in the image's /etc/passwd", userPart)
		}
		u.UID = entry.uid
	}
	if entry != nil {
		u.GID, u.Home = entry.gid, entry.home
	}
	if hasGroup {
		gid, err := resolveGroup(rootfs, groupPart)
		if err != nil {
			return nil, err
		}
		u.GID = gid
	}
	if entry != nil {
		u.Groups = memberOf(rootfs, entry.name, u.GID)
	}
	return u, nil
}

// LookupUID returns what the image's /etc/passwd says about uid (a
// runAsUser): its primary group and home, gid 0 and "/" if it has no entry.
func LookupUID(rootfs string, uid int64) *User {
	users, _ := readPasswd(rootfs)
	u := &User{UID: uid, Home: "/"}
	if e := findUser(users, func(e passwdEntry) bool { return e.uid == uid }); e != nil {
		u.GID, u.Home = e.gid, e.home
		u.Groups = memberOf(rootfs, e.name, e.gid)
	}
	return u
}

func findUser(users []passwdEntry, match func(passwdEntry) bool) *passwdEntry {
	for i := range users {
		if match(users[i]) {
			return &users[i]
		}
	}
	return nil
}

func resolveGroup(rootfs, group string) (int64, error) {
	if id, err := strconv.ParseInt(group, 10, 64); err == nil {
		return id, nil
	}
	var found *int64
	_ = readColonFile(rootfs, "etc/group", func(f []string) {
		if len(f) >= 3 && f[0] == group && found == nil {
			if id, err := strconv.ParseInt(f[2], 10, 64); err == nil {
				found = &id
			}
		}
	})
	if found == nil {
		return 0, fmt.Errorf("unable to find group %s: no matching entries in the image's /etc/group", group)
	}
	return *found, nil
}

// memberOf lists the groups other than primary that name /etc/group gives
// user.
func memberOf(rootfs, user string, primary int64) []int64 {
	var out []int64
	_ = readColonFile(rootfs, "etc/group", func(f []string) {
		if len(f) < 4 {
			return
		}
		id, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || id == primary {
			return
		}
		for _, m := range strings.Split(f[3], ",") {
			if strings.TrimSpace(m) == user {
				out = append(out, id)
				return
			}
		}
	})
	return out
}

func readPasswd(rootfs string) ([]passwdEntry, error) {
	var out []passwdEntry
	err := readColonFile(rootfs, "etc/passwd", func(f []string) {
		if len(f) < 6 {
			return
		}
		uid, err1 := strconv.ParseInt(f[2], 10, 64)
		gid, err2 := strconv.ParseInt(f[3], 10, 64)
		if err1 == nil && err2 == nil {
			out = append(out, passwdEntry{name: f[0], uid: uid, gid: gid, home: f[5]})
		}
	})
	return out, err
}

// readColonFile calls fn with the fields of each line of the image's file
// rel, opened inside the image's root (an image's /etc/passwd may be a
// symlink, which must not lead to the node's).
func readColonFile(rootfs, rel string, fn func([]string)) error {
	t, err := openTree(rootfs)
	if err != nil {
		return err
	}
	defer t.close()
	fd, err := t.open(rel, unix.O_RDONLY)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), rel)
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fn(strings.Split(line, ":"))
	}
	return sc.Err()
}
