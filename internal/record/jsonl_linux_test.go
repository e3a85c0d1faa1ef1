package record

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// fsizeChildEnv names the file a child test process writes under a file size
// limit (RLIMIT_FSIZE), which makes a real file fail mid-write the way a
// full disk does: the write that crosses the limit is short, the next one
// fails with EFBIG. The limit is set in a child so that no other test's
// files are affected.
const fsizeChildEnv = "SURGE_RECORD_FSIZE_CHILD"

const fsizeLimit = 100_000 // bytes, not a multiple of a line's length

func TestWriterFileSizeLimit(t *testing.T) {
	if path := os.Getenv(fsizeChildEnv); path != "" {
		fsizeChild(path)
		return
	}
	if testing.CoverMode() != "" {
		t.Skip("the child's coverage output would hit the file size limit")
	}
	path := filepath.Join(t.TempDir(), "requests.jsonl")
	cmd := exec.Command(os.Args[0], "-test.run=^TestWriterFileSizeLimit$")
	cmd.Env = append(os.Environ(), fsizeChildEnv+"="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	count, err := strconv.Atoi(string(bytes.TrimSpace(bytes.SplitN(out, []byte("\n"), 2)[0])))
	if err != nil {
		t.Fatalf("child output %q", out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := lines(t, b)
	if len(b) == 0 || len(b) > fsizeLimit {
		t.Fatalf("file of %d bytes; limit %d", len(b), fsizeLimit)
	}
	if len(got) != count {
		t.Fatalf("file holds %d records, the writer's Count said %d", len(got), count)
	}
}

// fsizeChild writes records to path under the file size limit and prints
// the Writer's Count after the failure; it exits non-zero if the writer
// does not fail as it must.
func fsizeChild(path string) {
	die := func(msg string) { os.Stdout.WriteString(msg + "\n"); os.Exit(3) }
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: fsizeLimit, Max: fsizeLimit}); err != nil {
		die("setrlimit: " + err.Error())
	}
	w, err := Create(path)
	if err != nil {
		die(err.Error())
	}
	r := full()
	for i := 0; i < 10*fsizeLimit/200 && err == nil; i++ {
		r.Seq = int64(i)
		err = w.Write(&r)
	}
	cerr := w.Close()
	switch {
	case err == nil:
		die("no write failed past the file size limit")
	case cerr != err || w.Err() != err:
		die("error not sticky: " + err.Error())
	case err.Error() != "record: write "+path+": file too large":
		die("message: " + err.Error())
	}
	os.Stdout.WriteString(strconv.FormatInt(w.Count(), 10) + "\n")
	os.Exit(0)
}
