package main

import (
	"bufio"
	"bytes"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuSeconds is this process's user + system CPU time so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// maxRSSMiB is this process's peak resident set (Linux reports KiB).
func maxRSSMiB() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Maxrss) / 1024
}

// procCPU is the user + system CPU-seconds of process pid from
// /proc/PID/stat (fields 14 and 15, in clock ticks of 1/100 s), or -1.
func procCPU(pid int) float64 {
	if pid <= 0 {
		return -1
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	i := bytes.LastIndexByte(b, ')') // the command name may hold spaces
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3 (state)
	if len(f) < 13 {
		return -1
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	stt, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return float64(ut+stt) / 100
}

// cpuBusy returns each CPU's busy time so far in seconds (/proc/stat:
// everything but idle and iowait, in ticks of 1/100 s), or nil.
func cpuBusy() []float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil
	}
	var out []float64
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		n, err := strconv.Atoi(f[0][3:])
		if err != nil || n != len(out) {
			return nil
		}
		var busy int64
		for i, v := range f[1:] {
			if i >= 8 { // guest time is already in user
				break
			}
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil
			}
			if i != 3 && i != 4 { // idle, iowait
				busy += x
			}
		}
		out = append(out, float64(busy)/100)
	}
	return out
}

// loadavg is the 1-minute load average.
func loadavg() string {
	f, err := os.Open("/proc/loadavg")
	if err != nil {
		return "?"
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	if s.Scan() {
		if v, _, ok := strings.Cut(s.Text(), " "); ok {
			return v
		}
	}
	return "?"
}

// cpuSample is this process's CPU time (cpuSeconds) at one instant.
type cpuSample struct {
	At  time.Time
	CPU float64 // CPU-seconds
}

// cpuSamples are samples in time order.
type cpuSamples []cpuSample

// at is the CPU time at t, linearly interpolated between the samples around
// it; before the first sample it is the first, after the last the last.
func (s cpuSamples) at(t time.Time) float64 {
	if len(s) == 0 {
		return 0
	}
	i := sort.Search(len(s), func(i int) bool { return s[i].At.After(t) }) // first sample after t
	switch {
	case i == 0:
		return s[0].CPU
	case i == len(s):
		return s[len(s)-1].CPU
	}
	a, b := s[i-1], s[i]
	f := float64(t.Sub(a.At)) / float64(b.At.Sub(a.At))
	return a.CPU + f*(b.CPU-a.CPU)
}

// cpuTrace samples the CPU time in a goroutine, so that the CPU time at an
// instant known only afterwards (the end of a run phase) can be read back.
type cpuTrace struct {
	samples cpuSamples // owned by the goroutine until done is closed
	quit    chan struct{}
	done    chan struct{}
}

// startCPUTrace starts a trace holding first; from the instant from on it
// adds a sample every period.
func startCPUTrace(first cpuSample, from time.Time, period time.Duration) *cpuTrace {
	t := &cpuTrace{samples: append(make(cpuSamples, 0, 4096), first), quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(t.done)
		wait := time.NewTimer(time.Until(from))
		defer wait.Stop()
		select {
		case <-t.quit:
			return
		case <-wait.C:
		}
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-t.quit:
				return
			case <-tick.C:
				t.samples = append(t.samples, cpuSample{time.Now(), cpuSeconds()})
			}
		}
	}()
	return t
}

// stop ends the sampling and returns the samples with the extra ones
// (taken elsewhere meanwhile; zero ones are left out), in time order.
func (t *cpuTrace) stop(extra ...cpuSample) cpuSamples {
	close(t.quit)
	<-t.done
	s := t.samples
	for _, x := range extra {
		if !x.At.IsZero() {
			s = append(s, x)
		}
	}
	slices.SortStableFunc(s, func(a, b cpuSample) int { return a.At.Compare(b.At) })
	return s
}
