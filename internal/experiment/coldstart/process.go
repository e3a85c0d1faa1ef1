package coldstart

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// server is a started server: sh -c StartCmd, leader of its own process
// group.
type server struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when sh has exited
	err  error         // cmd.Wait's, once done is closed
}

// start runs command with sh -c in a new process group, stdout and stderr
// to log.
func start(command string, log *os.File) (*server, error) {
	cmd := exec.Command("sh", "-c", command)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("coldstart: start sh -c: %w", err)
	}
	s := &server{cmd: cmd, done: make(chan struct{})}
	go func() {
		s.err = cmd.Wait()
		close(s.done)
	}()
	return s, nil
}

// exited reports whether sh has exited.
func (s *server) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// status says how sh ended: "exit status 1", "signal: killed".
func (s *server) status() string {
	if s.err == nil {
		return "exit status 0"
	}
	var ee *exec.ExitError
	if errors.As(s.err, &ee) {
		return ee.ProcessState.String()
	}
	return s.err.Error()
}

// groupAlive reports whether any process of the group is left.
func (s *server) groupAlive() bool {
	return syscall.Kill(-s.cmd.Process.Pid, 0) == nil
}

// stop sends SIGTERM to the whole group and, when a process of it is
// still there after grace, SIGKILL; it returns whether SIGKILL was needed.
// It waits for sh itself in any case.
func (s *server) stop(grace time.Duration) (killed bool) {
	pgid := s.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if s.exited() && !s.groupAlive() {
			return false
		}
		select {
		case <-s.done:
			time.Sleep(20 * time.Millisecond) // the rest of the group
		case <-time.After(time.Until(deadline)):
		}
	}
	if s.exited() && !s.groupAlive() {
		return false
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-s.done
	return true
}

// accepts reports whether a TCP connection to addr is accepted now.
func accepts(ctx context.Context, addr string) bool {
	d := net.Dialer{Timeout: probeConnectTimeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// waitClosed polls addr until it refuses connections, at most limit.
func waitClosed(ctx context.Context, addr string, poll, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for accepts(ctx, addr) {
		if time.Now().After(deadline) || !sleep(ctx, poll) {
			return false
		}
	}
	return true
}

// sleep waits d or until ctx is done; false when ctx is done.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
