package kubejob

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/surge-bench/surge/internal/field"
)

const experiment = "target: http://vllm.llm.svc:8000/v1\nmodel: qwen\nbaseline_rps: 20\nmultipliers: [2, 5]\n"

// canary is an API key in the environment of the process writing the
// manifests: it must appear in none of them.
const canary = "sk-canary-5f0c1e"

func config(mut func(*Config)) *Config {
	c := &Config{Name: "bench", Namespace: "llm", Version: "v0.9.0", Workers: 4, Command: "burst",
		Experiment: []byte(experiment), ExperimentName: "burst.yaml", APIKeySecret: "vllm-key",
		Args: []string{"--target", "http://vllm.llm.svc:8000/v1"}, Now: time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)}
	if mut != nil {
		mut(c)
	}
	return c
}

type objects struct {
	jobs     map[string]*batchv1.Job
	services []*corev1.Service
	cms      []*corev1.ConfigMap
	pvcs     []*corev1.PersistentVolumeClaim
	pods     []*corev1.Pod
	text     string
}

// decodeStrict reads every document of the rendered files back into the
// k8s.io/api type its kind names, refusing any field the type lacks.
func decodeStrict(t *testing.T, c *Config) objects {
	t.Helper()
	t.Setenv("OPENAI_API_KEY", canary)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	o := objects{jobs: map[string]*batchv1.Job{}}
	for _, f := range c.Files() {
		b, err := Render(f)
		if err != nil {
			t.Fatal(err)
		}
		o.text += string(b)
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var doc any
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f.Name, err)
			}
			js, _ := json.Marshal(doc)
			var tm struct{ APIVersion, Kind string }
			json.Unmarshal(js, &tm)
			var into any
			switch tm.Kind {
			case "Job":
				into = &batchv1.Job{}
			case "Service":
				into = &corev1.Service{}
			case "ConfigMap":
				into = &corev1.ConfigMap{}
			case "PersistentVolumeClaim":
				into = &corev1.PersistentVolumeClaim{}
			case "Pod":
				into = &corev1.Pod{}
			default:
				t.Fatalf("%s: kind %q", f.Name, tm.Kind)
			}
			jd := json.NewDecoder(bytes.NewReader(js))
			jd.DisallowUnknownFields()
			if err := jd.Decode(into); err != nil {
				t.Fatalf("%s: %s: %v", f.Name, tm.Kind, err)
			}
			switch v := into.(type) {
			case *batchv1.Job:
				o.jobs[v.Name] = v
				if v.APIVersion != "batch/v1" {
					t.Errorf("job %s: apiVersion %q", v.Name, v.APIVersion)
				}
			case *corev1.Service:
				o.services = append(o.services, v)
			case *corev1.ConfigMap:
				o.cms = append(o.cms, v)
			case *corev1.PersistentVolumeClaim:
				o.pvcs = append(o.pvcs, v)
			case *corev1.Pod:
				o.pods = append(o.pods, v)
			}
		}
	}
	if strings.Contains(o.text, canary) {
		t.Error("an API key from the environment is in a manifest")
	}
	return o
}

func args(j *batchv1.Job) []string { return j.Spec.Template.Spec.Containers[0].Args }

func checkIndexed(t *testing.T, j *batchv1.Job, n int32) {
	t.Helper()
	s := j.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion || *s.Parallelism != n || *s.Completions != n {
		t.Errorf("%s: completionMode %v parallelism %v completions %v; want Indexed, %d, %d", j.Name, s.CompletionMode, *s.Parallelism, *s.Completions, n, n)
	}
	if s.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("%s: restartPolicy %q", j.Name, s.Template.Spec.RestartPolicy)
	}
}

// checkKeyRef: the key comes from the Secret by reference, as the env var
// surge reads.
func checkKeyRef(t *testing.T, j *batchv1.Job) {
	t.Helper()
	for _, e := range j.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "OPENAI_API_KEY" {
			if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != "vllm-key" || e.ValueFrom.SecretKeyRef.Key != "api-key" {
				t.Errorf("%s: key env %+v", j.Name, e)
			}
			return
		}
	}
	t.Errorf("%s: no OPENAI_API_KEY from the Secret", j.Name)
}

func TestClusterCoordinator(t *testing.T) {
	o := decodeStrict(t, config(nil))
	w, co := o.jobs["bench-workers"], o.jobs["bench-coordinator"]
	if w == nil || co == nil || len(o.services) != 1 || len(o.cms) != 1 || len(o.pvcs) != 1 {
		t.Fatalf("objects: jobs %v services %d configmaps %d pvcs %d", slices.Collect(maps.Keys(o.jobs)), len(o.services), len(o.cms), len(o.pvcs))
	}
	checkIndexed(t, w, 4)
	if want := []string{"worker", "--coordinator", "http://bench-coordinator.llm.svc:7070", "--name", "$(POD_NAME)", "--api-key-env", "OPENAI_API_KEY"}; !slices.Equal(args(w), want) {
		t.Errorf("worker args %q, want %q", args(w), want)
	}
	want := []string{"burst", "--file", "/etc/surge/experiment.yaml", "--workers", "4", "--coordinator-listen", ":7070", "--out", "/results/bench", "--api-key-env", "OPENAI_API_KEY", "--target", "http://vllm.llm.svc:8000/v1"}
	if !slices.Equal(args(co), want) {
		t.Errorf("coordinator args %q, want %q", args(co), want)
	}
	svc := o.services[0]
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || svc.Name != "bench-coordinator" || svc.Spec.Ports[0].Port != 7070 {
		t.Errorf("service: %+v", svc.Spec)
	}
	// The Service selects the coordinator's pod and no worker's.
	sel := func(l map[string]string) bool {
		for k, v := range svc.Spec.Selector {
			if l[k] != v {
				return false
			}
		}
		return len(svc.Spec.Selector) > 0
	}
	if !sel(co.Spec.Template.Labels) || sel(w.Spec.Template.Labels) {
		t.Errorf("selector %v: coordinator labels %v, worker labels %v", svc.Spec.Selector, co.Spec.Template.Labels, w.Spec.Template.Labels)
	}
	if o.cms[0].Data[ExperimentFile] != experiment {
		t.Errorf("configmap data %q", o.cms[0].Data)
	}
	vols := co.Spec.Template.Spec.Volumes
	if len(vols) != 2 || vols[0].ConfigMap.Name != o.cms[0].Name || vols[1].PersistentVolumeClaim.ClaimName != o.pvcs[0].Name {
		t.Errorf("coordinator volumes %+v", vols)
	}
	checkKeyRef(t, w)
	checkKeyRef(t, co)
	if p := w.Spec.PodFailurePolicy; p == nil || p.Rules[0].Action != batchv1.PodFailurePolicyActionIgnore || !slices.Equal(p.Rules[0].OnExitCodes.Values, []int32{3}) {
		t.Errorf("worker podFailurePolicy %+v: a worker before the coordinator (exit 3) must be replaced", p)
	}
	if strings.Contains(o.text, "creationTimestamp") {
		t.Error("creationTimestamp: null left in the manifests")
	}
}

func TestExternalCoordinator(t *testing.T) {
	c := config(func(c *Config) { c.CoordinatorListen = "203.0.113.7:7070" })
	o := decodeStrict(t, c)
	if len(o.jobs) != 1 || len(o.services) != 0 || len(o.cms) != 0 {
		t.Fatalf("want only the workers' Job: jobs %d services %d configmaps %d", len(o.jobs), len(o.services), len(o.cms))
	}
	w := o.jobs["bench-workers"]
	checkIndexed(t, w, 4)
	if args(w)[2] != "http://203.0.113.7:7070" {
		t.Errorf("worker args %q", args(w))
	}
	steps := strings.Join(c.Steps("k8s"), "\n")
	if !strings.Contains(steps, "surge burst --file burst.yaml --workers 4 --coordinator-listen :7070 --out bench --target http://vllm.llm.svc:8000/v1") {
		t.Errorf("steps do not start the coordinator here:\n%s", steps)
	}
}

func TestStaticShards(t *testing.T) {
	o := decodeStrict(t, config(func(c *Config) { c.Static = true; c.Workers = 3 }))
	s, m := o.jobs["bench-shards"], o.jobs["bench-merge"]
	if s == nil || m == nil || len(o.services) != 0 {
		t.Fatalf("jobs %v services %d", slices.Collect(maps.Keys(o.jobs)), len(o.services))
	}
	checkIndexed(t, s, 3)
	want := []string{"burst", "--file", "/etc/surge/experiment.yaml", "--shard", "auto/3", "--start-at", "2026-12-02T04:03:00Z",
		"--out", "/results/bench/shard-$(JOB_COMPLETION_INDEX)", "--api-key-env", "OPENAI_API_KEY", "--target", "http://vllm.llm.svc:8000/v1"}
	if !slices.Equal(args(s), want) {
		t.Errorf("shard args %q\nwant %q", args(s), want)
	}
	if want := []string{"merge", "/results/bench/shard-0", "/results/bench/shard-1", "/results/bench/shard-2", "--out", "/results/bench/merged"}; !slices.Equal(args(m), want) {
		t.Errorf("merge args %q", args(m))
	}
	if o.pvcs[0].Spec.AccessModes[0] != corev1.ReadWriteMany {
		t.Errorf("shards on several nodes need ReadWriteMany, got %v", o.pvcs[0].Spec.AccessModes)
	}
	checkKeyRef(t, s)
	for _, e := range m.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "OPENAI_API_KEY" {
			t.Error("the merge Job gets the API key; it sends nothing")
		}
	}
}

// TestKeyEnvIsRead: every pod that sends requests is told to read its key
// from the env var the Secret is mounted as (surge run's --api-key-env),
// in each mode and with a variable of the user's naming: a worker reads
// its key from its own environment, which the coordinator never sends.
func TestKeyEnvIsRead(t *testing.T) {
	for _, mode := range []func(*Config){nil, func(c *Config) { c.Static = true }, func(c *Config) { c.CoordinatorListen = "203.0.113.7:7070" }} {
		c := config(func(c *Config) {
			c.APIKeyEnv = "VLLM_KEY"
			if mode != nil {
				mode(c)
			}
		})
		o := decodeStrict(t, c)
		for name, j := range o.jobs {
			ct := j.Spec.Template.Spec.Containers[0]
			var fromSecret []string
			for _, e := range ct.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					fromSecret = append(fromSecret, e.Name)
				}
			}
			i := slices.Index(ct.Args, "--api-key-env")
			if name == "bench-merge" {
				if i >= 0 || len(fromSecret) > 0 {
					t.Errorf("%s: the merge sends nothing, yet key env %v args %q", name, fromSecret, ct.Args)
				}
				continue
			}
			if i < 0 || i+1 >= len(ct.Args) || !slices.Equal(fromSecret, []string{ct.Args[i+1]}) || ct.Args[i+1] != "VLLM_KEY" {
				t.Errorf("%s (%s): the Secret is mounted as %v, the args %q do not read it", name, c.Mode(), fromSecret, ct.Args)
			}
		}
	}
}

func TestNoSecretNoKeyEnv(t *testing.T) {
	o := decodeStrict(t, config(func(c *Config) { c.APIKeySecret = "" }))
	if strings.Contains(o.text, "OPENAI_API_KEY") || strings.Contains(o.text, "secretKeyRef") || strings.Contains(o.text, "--api-key-env") {
		t.Error("a key env without --api-key-secret")
	}
	if !strings.Contains(o.text, "image: ghcr.io/surge-bench/surge:v0.9.0") {
		t.Error("the default image does not name the surge version")
	}
}

func TestBadConfig(t *testing.T) {
	cases := []struct {
		name  string
		mut   func(*Config)
		field string
		msg   string
	}{
		{"no workers", func(c *Config) { c.Workers = 0 }, "workers", "must be ≥ 1"},
		{"command", func(c *Config) { c.Command = "soak" }, "command", "want run, burst or capacity"},
		{"not yaml", func(c *Config) { c.Experiment = []byte("target: [unclosed\n") }, "file", "burst.yaml: not a YAML mapping"},
		{"a list", func(c *Config) { c.Experiment = []byte("- a\n- b\n") }, "file", "not a YAML mapping"},
		{"no file", func(c *Config) { c.Experiment = nil }, "file", "required"},
		{"name", func(c *Config) { c.Name = "Bench_1" }, "name", "DNS label"},
		{"namespace", func(c *Config) { c.Namespace = "LLM" }, "namespace", ""},
		{"cpu", func(c *Config) { c.CPU = "lots" }, "cpu", "lots"},
		{"listen", func(c *Config) { c.CoordinatorListen = "7070" }, "coordinator-listen", "HOST:PORT"},
		{"static+listen", func(c *Config) { c.Static = true; c.CoordinatorListen = "h:1" }, "static", "no coordinator"},
		{"static capacity", func(c *Config) { c.Static = true; c.Command = "capacity" }, "static", "use a coordinator"},
		{"secret", func(c *Config) { c.APIKeySecret = "Bad Name" }, "api-key-secret", ""},
		{"start-at past", func(c *Config) { c.Static = true; c.StartAt = c.Now.Add(-time.Hour) }, "start-at", "in the past"},
		{"key env after --", func(c *Config) { c.Args = append(c.Args, "--api-key-env=OTHER") }, "api-key-env", "not after --"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := config(tc.mut).Validate()
			var es field.Errors
			if !errors.As(err, &es) || es[0].Field != tc.field || !strings.Contains(es[0].Message, tc.msg) {
				t.Errorf("got %v; want field %s with %q", err, tc.field, tc.msg)
			}
		})
	}
}

// TestKubectlAccepts hands the written folder to the real kubectl,
// offline: `kubectl create --dry-run=client` needs a server's discovery
// even so, so the check is `kubectl label --local`, which reads every
// file, decodes every document and maps its apiVersion and kind, without
// a cluster. It is skipped where kubectl is missing.
func TestKubectlAccepts(t *testing.T) {
	kc, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("no kubectl")
	}
	for _, mode := range []func(*Config){nil, func(c *Config) { c.Static = true }, func(c *Config) { c.CoordinatorListen = "203.0.113.7:7070" }} {
		c := config(mode)
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		var want []string
		for _, f := range c.Files() {
			b, err := Render(f)
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, f.Name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, o := range f.Objects {
				js, _ := json.Marshal(o)
				var m struct {
					Kind     string
					Metadata struct{ Name string }
				}
				json.Unmarshal(js, &m)
				want = append(want, strings.ToLower(m.Kind)+"/"+m.Metadata.Name)
			}
		}
		cmd := exec.Command(kc, "label", "--local", "-R", "-f", dir, "surge.dev/checked=yes", "-o", "name")
		cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(t.TempDir(), "none"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl label --local: %v\n%s", err, out)
		}
		var got []string
		for _, l := range strings.Fields(string(out)) {
			kind, name, _ := strings.Cut(l, "/")
			kind, _, _ = strings.Cut(kind, ".") // job.batch → job
			got = append(got, kind+"/"+name)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("kubectl read %q, want %q", got, want)
		}
	}
}

// TestShardSLOFailureDoesNotFailSiblings: REVIEW15 #14. A shard's SLO
// verdict (exit 1) must fail only its index: backoffLimitPerIndex 0, no
// global backoffLimit 0, no FailJob rule; and every printed wait returns
// on Failed as well as Complete (run against a fake kubectl).
func TestShardSLOFailureDoesNotFailSiblings(t *testing.T) {
	c := config(func(c *Config) { c.Static = true; c.Workers = 3 })
	o := decodeStrict(t, c)
	s := o.jobs["bench-shards"].Spec
	if s.BackoffLimitPerIndex == nil || *s.BackoffLimitPerIndex != 0 || s.BackoffLimit != nil || s.MaxFailedIndexes != nil {
		t.Errorf("shards: backoffLimitPerIndex %v backoffLimit %v maxFailedIndexes %v; want 0, unset, unset", s.BackoffLimitPerIndex, s.BackoffLimit, s.MaxFailedIndexes)
	}
	if p := s.PodFailurePolicy; p != nil {
		for _, r := range p.Rules {
			if r.Action == batchv1.PodFailurePolicyActionFailJob {
				t.Errorf("a FailJob rule kills the sibling shards: %+v", r)
			}
		}
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	for _, mode := range []func(*Config){nil, func(c *Config) { c.Static = true }} {
		c := config(mode)
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		var waits []string
		for _, l := range c.Steps("k8s") {
			if strings.Contains(l, "--for=condition=complete") {
				t.Errorf("a wait that blocks on a Failed Job: %s", l)
			}
			if strings.HasPrefix(l, "until ") {
				waits = append(waits, l)
			}
		}
		if len(waits) == 0 {
			t.Fatalf("%s: no wait for the Job's end in %q", c.Mode(), c.Steps("k8s"))
		}
		bin := t.TempDir()
		// The fake kubectl answers what a Job that failed an index says.
		fake := "#!/bin/sh\necho 'FailureTarget Failed'\n"
		if err := os.WriteFile(filepath.Join(bin, "kubectl"), []byte(fake), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, w := range waits {
			cmd := exec.Command(bash, "-c", w)
			cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "Failed" {
				t.Errorf("%s: %v %q, want it to return printing Failed", w, err, out)
			}
		}
	}
}

// TestDockerfile: REVIEW15 #13. The repository builds the image the
// manifests name (static, non-root, surge as the entrypoint, since the
// containers get only args), and every surge pod runs as the image's user
// with the results volume writable to it.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	for _, want := range []string{"CGO_ENABLED=0", "./cmd/surge", "-X main.version=", `ENTRYPOINT ["/usr/local/bin/surge"]`, "USER " + strconv.FormatInt(ImageUID, 10)} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	if strings.Count(df, "\nFROM ") < 2 {
		t.Error("Dockerfile: want a multi-stage build (the Go toolchain stays out of the image)")
	}
	for _, mode := range []func(*Config){nil, func(c *Config) { c.Static = true }} {
		for name, j := range decodeStrict(t, config(mode)).jobs {
			sc := j.Spec.Template.Spec.SecurityContext
			if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != ImageUID || sc.FSGroup == nil || *sc.FSGroup != ImageUID || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
				t.Errorf("%s: securityContext %+v, want the image's uid %d and fsGroup", name, sc, ImageUID)
			}
			if c := j.Spec.Template.Spec.Containers[0]; len(c.Command) != 0 {
				t.Errorf("%s: command %q overrides the image's entrypoint", name, c.Command)
			}
		}
	}
}
