// Command dataset measures surge's dataset path: it writes a dataset file
// of -rows rows (openai-jsonl: a system and a user message of ~1 KiB in
// all; sharegpt: a JSON array of conversations of a ~1 KiB question and a
// ~1 KiB answer), loads it with workload.LoadDataset, then generates
// -requests requests from it with a workload.Generator (shuffled, with the
// nonce), and prints wall and CPU time of each step, allocations per
// request, the live heap after loading and the peak RSS.
//
//	go run ./bench/dataset -rows 100000 -requests 1000000 -format openai-jsonl
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/surge-bench/surge/internal/schedule"
	"github.com/surge-bench/surge/internal/workload"
)

func main() {
	rows := flag.Int("rows", 100_000, "dataset rows")
	requests := flag.Int("requests", 1_000_000, "requests to generate")
	format := flag.String("format", workload.FormatOpenAIJSONL, "openai-jsonl or sharegpt")
	sample := flag.String("sample", workload.SampleShuffle, "shuffle, random or sequential")
	flag.Parse()
	dir, err := os.MkdirTemp("", "surge-dataset-bench")
	check(err)
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "dataset")
	check(write(path, *format, *rows))
	st, err := os.Stat(path)
	check(err)

	runtime.GC()
	wall, cpu := time.Now(), cpuTime()
	d, err := workload.LoadDataset(path, *format)
	check(err)
	loadWall, loadCPU := time.Since(wall), cpuTime()-cpu
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heap := ms.HeapAlloc

	p, err := workload.Lookup(workload.ProfileChat)
	check(err)
	g, err := workload.New(workload.Config{Profile: p, Seed: 1, Dataset: d, DatasetSample: *sample})
	check(err)
	runtime.ReadMemStats(&ms)
	mallocs := ms.Mallocs
	wall, cpu = time.Now(), cpuTime()
	var sink int
	for k := range int64(*requests) {
		r := g.Generate(schedule.Arrival{Seq: k})
		sink += r.PromptTokens + r.DatasetRow
	}
	genWall, genCPU := time.Since(wall), cpuTime()-cpu
	runtime.ReadMemStats(&ms)
	allocs := float64(ms.Mallocs-mallocs) / float64(*requests)

	var ru syscall.Rusage
	check(syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	fmt.Printf("dataset: %s, %d rows, %.1f MiB file\n", *format, d.Len(), float64(st.Size())/(1<<20))
	fmt.Printf("load:     %.2f s wall, %.2f CPU-s (%.0f MB/s of CPU), live heap after load %.1f MiB\n",
		loadWall.Seconds(), loadCPU.Seconds(), float64(st.Size())/1e6/loadCPU.Seconds(), float64(heap)/(1<<20))
	fmt.Printf("generate: %d requests (%s) in %.2f s wall, %.2f CPU-s: %.0f ns wall and %.0f ns CPU per request, %.2f allocations per request\n",
		*requests, *sample, genWall.Seconds(), genCPU.Seconds(), float64(genWall.Nanoseconds())/float64(*requests),
		float64(genCPU.Nanoseconds())/float64(*requests), allocs)
	fmt.Printf("at 2,000 req/s the generator's dataset work is %.3f%% of one core\n", 2000*float64(genCPU.Nanoseconds())/float64(*requests)/1e9*100)
	fmt.Printf("peak RSS: %.0f MiB (checksum %d)\n", float64(ru.Maxrss)/1024, sink%10)
}

// write makes a dataset of n rows from surge's own English-like text.
func write(path, format string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	text, err := corpus(4 << 20)
	if err != nil {
		return err
	}
	cut := func(i, size int) []byte {
		off := (i * 7919) % (len(text) - 4096)
		b, _ := json.Marshal(string(text[off : off+size]))
		return b
	}
	if format == workload.FormatShareGPT {
		w.WriteString("[\n")
	}
	for i := range n {
		switch format {
		case workload.FormatShareGPT:
			if i > 0 {
				w.WriteString(",\n")
			}
			fmt.Fprintf(w, `{"id":"c%d","conversations":[{"from":"human","value":%s},{"from":"gpt","value":%s}]}`, i, cut(i, 600+i%800), cut(i+1, 600+i%700))
		default:
			fmt.Fprintf(w, `{"messages":[{"role":"system","content":"You are assistant %d."},{"role":"user","content":%s}],"max_tokens":%d}`+"\n",
				i%10, cut(i, 600+i%800), 64+i%256)
		}
	}
	if format == workload.FormatShareGPT {
		w.WriteString("\n]\n")
	}
	return w.Flush()
}

// corpus is n bytes of surge's synthetic English-like text (one prompt of
// the synthetic generator, without the nonce).
func corpus(n int) ([]byte, error) {
	p := workload.Profile{Name: "text", Prompt: workload.Fixed(n / workload.BytesPerToken), Output: workload.Fixed(1), MaxTokens: 1}
	g, err := workload.New(workload.Config{Profile: p, NoNonce: true})
	if err != nil {
		return nil, err
	}
	return []byte(g.Generate(schedule.Arrival{}).Prompt), nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	check(syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "dataset bench:", err)
		os.Exit(1)
	}
}
