package rundir

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// childEnv makes the test binary a child run: it claims the folder named by
// the variable, prints "locked" and holds the folder until its stdin ends.
const childEnv = "SURGE_RUNDIR_TEST_CHILD"

const childOwner = "surge burst (child)"

func TestMain(m *testing.M) {
	if path := os.Getenv(childEnv); path != "" {
		d, err := Create(path, Options{Owner: childOwner})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("locked")
		io.Copy(io.Discard, os.Stdin)
		if err := d.Close(); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// child is another process holding a folder.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// holdInChild starts a child process that claims path, and returns once it
// holds it.
func holdInChild(t *testing.T, path string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, stdin: stdin}
	t.Cleanup(func() { c.stdin.Close(); c.cmd.Process.Kill(); c.cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != "locked\n" {
		t.Fatalf("child: %q, %v", line, err)
	}
	return c
}

// release makes the child close its folder and exit.
func (c *child) release(t *testing.T) {
	t.Helper()
	c.stdin.Close()
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
}

// busy checks that err is a *BusyError about path held by pid and owner,
// and that its message says so.
func busy(t *testing.T, err error, path string, pid int, owner string) {
	t.Helper()
	var be *BusyError
	if !errors.As(err, &be) {
		t.Fatalf("got %v, want a *BusyError", err)
	}
	if !errors.Is(err, ErrFolder) {
		t.Errorf("%v does not match ErrFolder", err)
	}
	if be.Path != path || be.Holder.PID != pid || be.Holder.Owner != owner {
		t.Fatalf("BusyError %+v, want %s held by pid %d (%s)", be, path, pid, owner)
	}
	msg := err.Error()
	for _, want := range []string{"rundir: " + path + " is in use by another run", "pid " + strconv.Itoa(pid), owner, "started ", "give another --out"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}

func TestCreateConcurrentGoroutines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x")
	const n = 8
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		dirs  [n]*Dir
		errs  [n]error
	)
	for i := range n {
		wg.Go(func() {
			<-start
			dirs[i], errs[i] = Create(path, Options{Owner: fmt.Sprintf("run %d", i)})
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i := range n {
		if errs[i] == nil {
			if winner >= 0 {
				t.Fatalf("runs %d and %d both claimed the folder", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatalf("no run claimed the folder: %v", errs)
	}
	defer dirs[winner].Close()
	for i := range n {
		if i != winner {
			busy(t, errs[i], path, os.Getpid(), fmt.Sprintf("run %d", winner))
		}
	}
}

func TestCreateHeldByAnotherProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x")
	c := holdInChild(t, path)
	_, err := Create(path, Options{Owner: "surge run"})
	busy(t, err, path, c.cmd.Process.Pid, childOwner)
	if _, err := Create(path, Options{Force: true}); !errors.As(err, new(*BusyError)) {
		t.Fatalf("Force must not take a held folder: %v", err)
	}
	c.release(t)
	d, err := Create(path, Options{})
	if err != nil {
		t.Fatalf("after the child released the folder: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestCreateAfterHolderKilled(t *testing.T) {
	if !lockReleasedOnExit {
		t.Skip("without flock a killed run's lock file stays")
	}
	path := filepath.Join(t.TempDir(), "x")
	c := holdInChild(t, path)
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	c.cmd.Wait()
	if _, err := os.Stat(lockPath(path)); err != nil {
		t.Fatalf("the killed run's lock file should still be there: %v", err)
	}
	d, err := Create(path, Options{Owner: "next"})
	if err != nil {
		t.Fatalf("a killed run's stale lock file must not block: %v", err)
	}
	defer d.Close()
	if h, stale := d.StaleLock(); !stale || h.PID != c.cmd.Process.Pid {
		t.Errorf("stale lock %+v (%v), want the killed child's pid %d", h, stale, c.cmd.Process.Pid)
	}
	f, err := os.Open(lockPath(path))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if h := readHolder(f); h.PID != os.Getpid() || h.Owner != "next" {
		t.Fatalf("lock file records %+v, not the new holder", h)
	}
}

func TestCloseReleases(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x")
	for round := range 3 {
		d, err := Create(path, Options{})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if _, err := os.Stat(lockPath(path)); err != nil {
			t.Fatalf("round %d: no lock file while held: %v", round, err)
		}
		if err := d.Close(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if _, err := os.Stat(lockPath(path)); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("round %d: lock file after Close: %v", round, err)
		}
		if err := d.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if err := d.WriteJSON("summary.json", 1); err == nil || err.Error() != "rundir: "+path+": closed" {
			t.Fatalf("write after Close: %v", err)
		}
	}
}

// tree writes files (a name ending in "/" is a folder) under dir. A file
// holds "x\n", a manifest.json surge's own (a run folder), and a name given
// as "name=content" the content.
func tree(t *testing.T, dir string, files ...string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		content := "x\n"
		if filepath.Base(f) == manifestFile {
			content = `{"tool":"surge"}` + "\n"
		}
		if name, c, ok := strings.Cut(f, "="); ok {
			f, content = name, c
		}
		p := filepath.Join(dir, f)
		if strings.HasSuffix(f, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// list returns every path under dir, relative, sorted; folders end in "/".
func list(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if p == dir && errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		if p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if e.IsDir() {
			rel += "/"
		}
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	slices.Sort(out)
	return out
}

func TestCreateFolderContents(t *testing.T) {
	all := append(slices.Clone(Files), ".summary.json.tmp")
	cases := []struct {
		name  string
		files []string
		force bool
		err   string   // the error; "" for none
		left  []string // what the folder holds after Create (besides the lock file)
	}{
		{name: "new folder"},
		{name: "empty folder", files: []string{}},
		{name: "a stale lock file only", files: []string{LockFile}},
		{name: "force on an empty folder", force: true},
		{name: "force removes surge's files and run folders, keeps the rest",
			files: append(slices.Clone(all), "notes.txt", "burst-5x/manifest.json", "burst-5x/requests.jsonl",
				"burst-5x/report.html", "keep/data.csv", "empty/", "requests.jsonl.bak"),
			force: true,
			left:  []string{"empty/", "keep/", "keep/data.csv", "notes.txt", "requests.jsonl.bak"}},

		{name: "force keeps a folder whose manifest.json is not surge's",
			files: []string{`webapp/manifest.json={"name":"my app"}`, "webapp/src/main.js", "burst-5x/manifest.json"},
			force: true,
			left:  []string{"webapp/", "webapp/manifest.json", "webapp/src/", "webapp/src/main.js"}},

		{name: "force clears a nested experiment folder (burst's capacity/)",
			files: []string{"burst-2x/manifest.json", "capacity/capacity.json", "capacity/results.md",
				"capacity/step-01-1rps/manifest.json", "capacity/step-01-1rps/requests.jsonl"},
			force: true},
		{name: "force keeps a folder holding someone else's files beside run folders",
			files: []string{"capacity/capacity.json", "capacity/step-01-1rps/manifest.json", "capacity/notes.txt"},
			force: true,
			left:  []string{"capacity/", "capacity/capacity.json", "capacity/notes.txt", "capacity/step-01-1rps/", "capacity/step-01-1rps/manifest.json"}},

		// Refused.
		{name: "a run", files: []string{"manifest.json", "requests.jsonl", "summary.json", "report.html"},
			err: "rundir: %s already holds a run (manifest.json, report.html, requests.jsonl, …); give another --out, or --force to replace it"},
		{name: "an experiment", files: []string{"burst-5x/manifest.json"},
			err: "rundir: %s already holds a run (burst-5x/); give another --out, or --force to replace it"},
		{name: "someone else's files", files: []string{"notes.txt", "keep/"},
			err: "rundir: %s is not empty (keep/, notes.txt); give another --out, or --force to write into it (files surge did not write are kept)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x")
			if c.files != nil {
				tree(t, path+"/", c.files...)
			}
			before := list(t, path)
			d, err := Create(path, Options{Force: c.force})
			if c.err != "" {
				want := fmt.Sprintf(c.err, path)
				if err == nil || err.Error() != want {
					t.Fatalf("got %v\nwant %s", err, want)
				}
				var ne *NotEmptyError
				if !errors.As(err, &ne) || ne.Path != path || !errors.Is(err, ErrFolder) {
					t.Fatalf("%#v is not a *NotEmptyError about %s matching ErrFolder", err, path)
				}
				if after := list(t, path); !slices.Equal(after, before) {
					t.Fatalf("a refused Create changed the folder:\nbefore %v\nafter  %v", before, after)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := slices.DeleteFunc(list(t, path), func(s string) bool { return s == LockFile })
			if !slices.Equal(got, c.left) {
				t.Errorf("folder holds %v, want %v", got, c.left)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestForceKeepsAHeldRunFolder(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "x")
	sub := filepath.Join(parent, "burst-5x")
	c := holdInChild(t, sub)
	tree(t, sub+"/", "manifest.json") // the child's run has begun
	_, err := Create(parent, Options{Force: true})
	busy(t, err, sub, c.cmd.Process.Pid, childOwner)
	if _, err := os.Stat(filepath.Join(sub, "manifest.json")); err != nil {
		t.Fatalf("a held run folder was removed: %v", err)
	}
	c.release(t)
}

func TestCreateUnusablePath(t *testing.T) {
	base := t.TempDir()
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		path string
		want string
	}{
		{"parent is a regular file", filepath.Join(file, "run"), "rundir: " + filepath.Join(file, "run") + ": mkdir " + file + ": not a directory; give another --out"},
		{"grandparent is a regular file", filepath.Join(file, "a", "run"), "rundir: " + filepath.Join(file, "a", "run") + ": mkdir " + file + ": not a directory; give another --out"},
		{"path is a regular file", file, "rundir: " + file + ": mkdir: not a directory; give another --out"},
		{"empty path", "", "rundir: : no folder given; give another --out"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := list(t, base)
			d, err := Create(c.path, Options{Force: true})
			if err == nil {
				d.Close()
				t.Fatal("Create succeeded")
			}
			if err.Error() != c.want || !errors.Is(err, ErrFolder) {
				t.Fatalf("got %q (ErrFolder %v)\nwant %q", err, errors.Is(err, ErrFolder), c.want)
			}
			if after := list(t, base); !slices.Equal(after, before) {
				t.Fatalf("a failed Create changed the file system:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

func TestDefaultPath(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 31, 2, 0, time.Local)
	format := regexp.MustCompile(`^out/burst-20261130-103102-[0-9a-f]{4}$`)
	seen := map[string]bool{}
	for range 100 {
		p := filepath.ToSlash(DefaultPath("out", "burst", now))
		if !format.MatchString(p) {
			t.Fatalf("%q does not match %s", p, format)
		}
		if seen[p] {
			t.Fatalf("%q picked twice", p)
		}
		seen[p] = true
	}
}

func TestSub(t *testing.T) {
	d, err := Create(filepath.Join(t.TempDir(), "x"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	tree(t, d.Path()+"/", "burst-9x/", "burst-7x/manifest.json", "foreign/notes.txt")

	s, err := d.Sub("burst-5x")
	if err != nil {
		t.Fatal(err)
	}
	if s.Path() != filepath.Join(d.Path(), "burst-5x") {
		t.Fatalf("Path %s", s.Path())
	}
	if err := s.WriteJSON("summary.json", map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.Path(), LockFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a sub has a lock file of its own: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(d.Path(), Options{}); !errors.As(err, new(*BusyError)) {
		t.Fatalf("a sub's Close released the parent: %v", err)
	}
	if s, err := d.Sub("burst-9x"); err != nil || s.Path() != filepath.Join(d.Path(), "burst-9x") {
		t.Fatalf("an existing empty folder: %v", err)
	}

	cases := []struct {
		name string
		want string
	}{
		{"burst-7x", "rundir: %s/burst-7x already holds a run (manifest.json); give another --out, or --force to replace it"},
		{"foreign", "rundir: %s/foreign is not empty (notes.txt); give another --out, or --force to write into it (files surge did not write are kept)"},
		{"", `rundir: %s: sub folder "": not a name`},
		{"..", `rundir: %s: sub folder "..": not a name`},
		{"a/b", `rundir: %s: sub folder "a/b": not a single path element`},
		{LockFile, `rundir: %s: sub folder ".surge.lock": the lock file`},
	}
	for _, c := range cases {
		t.Run("refused "+c.name, func(t *testing.T) {
			_, err := d.Sub(c.name)
			if want := fmt.Sprintf(c.want, d.Path()); err == nil || err.Error() != want {
				t.Fatalf("got %v\nwant %s", err, want)
			}
		})
	}

	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Sub("burst-6x"); err == nil {
		t.Error("Sub after Close must fail")
	}
	if err := s.WriteJSON("results.json", 1); err == nil {
		t.Error("writing into a sub after its parent's Close must fail")
	}
}

func TestHolderString(t *testing.T) {
	now := time.Now()
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.Local)
	cases := []struct {
		name string
		h    Holder
		want string
	}{
		{"everything, today", Holder{PID: 4242, Owner: "surge burst", Started: now}, "pid 4242, surge burst, started " + now.Format("15:04:05")},
		{"another day", Holder{PID: 7, Started: old}, "pid 7, started 2020-01-02 03:04:05"},
		{"nothing recorded", Holder{}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.h.String(); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
	msg := (&BusyError{Path: "out/x"}).Error()
	if want := "rundir: out/x is in use by another run; give another --out"; lockReleasedOnExit && msg != want {
		t.Fatalf("got %q, want %q", msg, want)
	}
}

// A lock file left by a run that died (SIGKILL: the kernel dropped its
// flock, the file stayed) is reclaimed, and the Dir names that run; a
// folder released cleanly has nothing to say.
func TestStaleLockReclaimed(t *testing.T) {
	if !lockReleasedOnExit {
		t.Skip("without flock a dead run's lock file must be removed by hand")
	}
	dir := filepath.Join(t.TempDir(), "out")
	d, err := Create(dir, Options{Owner: "surge run"})
	if err != nil {
		t.Fatal(err)
	}
	if _, stale := d.StaleLock(); stale || d.StaleNote() != "" {
		t.Fatalf("a new folder reports a stale lock: %q", d.StaleNote())
	}
	if err := d.WriteFile("requests.jsonl", func(w io.Writer) error { _, err := io.WriteString(w, "{}\n"); return err }); err != nil {
		t.Fatal(err)
	}
	// Die without Close: the lock file stays, its flock goes with the
	// process (here: with the file descriptor).
	d.lock.f.Close()

	r, err := Reopen(dir, "surge report")
	if err != nil {
		t.Fatalf("reopen after a dead holder: %v", err)
	}
	defer r.Close()
	h, stale := r.StaleLock()
	if !stale || h.PID != os.Getpid() || h.Owner != "surge run" {
		t.Fatalf("stale lock %+v (%v), want this process's surge run", h, stale)
	}
	if n := r.StaleNote(); !strings.Contains(n, "ended without releasing it (pid ") || !strings.Contains(n, "surge run") {
		t.Errorf("note %q", n)
	}
}
