package run

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/surge-bench/surge/internal/analyze"
	"github.com/surge-bench/surge/internal/schedule"
)

// The peak memory of a run in virtual time is estimated from the requests
// the engine model holds at once. An engine that cannot keep up holds each
// request until its --timeout, so at most (rate × timeout) of a phase's
// arrivals are held together. Measured with /usr/bin/time -f %M on
// `surge run --simulate --duration 60s`: 706 MB at 20,000 req/s for 30 s
// (600 k requests held), 1,387 MB for 60 s (1.2 M): 1.13 KB a request.
const (
	virtualBytesPerHeld = 1600      // 1.13 KB live, with room for the collector
	baseBytes           = 128 << 20 // the process, the analysis, its windows
)

// A live run holds each request in flight (its goroutine, connection and
// buffers) and its schedule. Measured with /usr/bin/time -f %M on `surge
// run --rate 400 --duration 10s --max-in-flight 4000 --timeout 15s`
// against `surge sim` (4,000 streams open at once, waiting in its queue):
// peak RSS 104.9 MB against 23.3 MB at 2 req/s, 20.4 KB a stream.
const (
	liveBytesPerStream  = 32 << 10 // 20.4 KB measured, with room for net/http's larger buffers
	liveBytesPerArrival = 96       // a schedule.Arrival held until the run ends
)

// LiveMemoryNeed estimates the peak memory of plan p run live: --max-in-flight
// streams at once, and the schedule.
func LiveMemoryNeed(o Options, p schedule.Plan) float64 {
	var arrivals float64
	for _, b := range p.Bounds() {
		arrivals += b.Expected
	}
	return baseBytes + float64(o.MaxInFlight)*liveBytesPerStream + arrivals*liveBytesPerArrival
}

// VirtualMemoryNeed estimates the peak memory of plan p in virtual time:
// the requests the engine model may hold at once (each phase's arrivals
// within one timeout, at most the plan's) and the bytes they take.
func VirtualMemoryNeed(o Options, p schedule.Plan) (held, bytes float64) {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	var total float64
	for _, b := range p.Bounds() {
		total += b.Expected
		held = max(held, b.Rate*min(timeout, b.End-b.Start).Seconds())
	}
	held = min(held, total)
	return held, baseBytes + held*virtualBytesPerHeld
}

// CheckMemory refuses, before anything is sent or written, a plan in
// virtual time whose estimated peak memory exceeds what this machine (its
// cgroup limit or its available memory) has: such a run would otherwise
// end in the Go runtime's fatal "out of memory", with nothing written.
// A live run is checked at --max-in-flight streams at once
// (LiveMemoryNeed), the flag named in the refusal.
func CheckMemory(o Options, virtual bool, plans []schedule.Plan) error {
	avail, where := availableMemory()
	if avail == 0 {
		return nil // unknown here: nothing to check against
	}
	for _, p := range plans {
		if !virtual {
			if need := LiveMemoryNeed(o, p); need > float64(avail) {
				return configErr(fmt.Errorf("--max-in-flight: %s requests in flight at once would take about %s of memory (about 32 KB each, with the schedule); %s is available (%s): lower --max-in-flight, or give the process more memory",
					analyze.Thousands(int64(o.MaxInFlight)), gib(need), gib(float64(avail)), where))
			}
			continue
		}
		held, need := VirtualMemoryNeed(o, p)
		if need <= float64(avail) {
			continue
		}
		return configErr(fmt.Errorf("simulate: this plan would hold up to %s requests in the engine model at once (each phase's arrivals/s × the %s --timeout, for an engine that cannot keep up), about %s of memory; %s is available (%s): lower the rate, shorten --timeout, or shorten the phases",
			analyze.Thousands(int64(math.Round(held))), o.Timeout, gib(need), gib(float64(avail)), where))
	}
	return nil
}

// availableMemory is AvailableMemory; tests set their own.
var availableMemory = AvailableMemory

// AvailableMemory is the memory this process may still use: the smaller
// of its cgroup's room (memory.max − memory.current, cgroup v2) and the
// system's MemAvailable, with where the bound comes from; 0 when neither
// is known (not Linux).
func AvailableMemory() (uint64, string) {
	var avail uint64
	where := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
				if f := strings.Fields(rest); len(f) > 0 {
					if kb, err := strconv.ParseUint(f[0], 10, 64); err == nil {
						avail, where = kb<<10, "MemAvailable"
					}
				}
			}
		}
	}
	if room, ok := cgroupRoom(); ok && (avail == 0 || room < avail) {
		avail, where = room, "the cgroup's memory limit"
	}
	return avail, where
}

// cgroupRoom is the room left under this process's cgroup memory limit
// (v2: memory.max − memory.current; v1: memory.limit_in_bytes −
// memory.usage_in_bytes), found through /proc/self/cgroup; false without
// a limit.
func cgroupRoom() (uint64, bool) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var dir, limitFile, usedFile, cacheKey string
		switch {
		case parts[0] == "0" && parts[1] == "": // v2
			dir = "/sys/fs/cgroup" + parts[2]
			limitFile, usedFile, cacheKey = "memory.max", "memory.current", "inactive_file"
		case slices.Contains(strings.Split(parts[1], ","), "memory"): // v1
			dir = "/sys/fs/cgroup/memory" + parts[2]
			limitFile, usedFile, cacheKey = "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"
		default:
			continue
		}
		limit, lerr := readUint(dir + "/" + limitFile)
		used, uerr := readUint(dir + "/" + usedFile)
		// Inactive page cache (files written earlier) is counted as used
		// but given back under pressure.
		if cache := statValue(dir+"/memory.stat", cacheKey); cache < used {
			used -= cache
		}
		if lerr != nil || uerr != nil || limit >= 1<<62 || limit <= used {
			continue // no limit ("max", or v1's huge number)
		}
		return limit - used, true
	}
	return 0, false
}

// statValue is key's value in a cgroup memory.stat file; 0 when absent.
func statValue(path, key string) uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64) // "max" is an error: no limit
}

func gib(b float64) string {
	return strconv.FormatFloat(b/(1<<30), 'f', 1, 64) + " GiB"
}

// SoftMemoryLimit sets the Go runtime's soft memory limit to 90% of the
// memory available (unless GOMEMLIMIT sets one), so that the collector
// works harder as a run nears the machine's limit instead of letting the
// heap grow to twice what is live.
func SoftMemoryLimit() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	if avail, _ := AvailableMemory(); avail > 0 {
		debug.SetMemoryLimit(int64(float64(avail) * 0.9))
	}
}
