package main

import (
	"bufio"
	"bytes"
	"os"
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
