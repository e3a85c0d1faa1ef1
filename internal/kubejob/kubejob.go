// Package kubejob writes the Kubernetes manifests of a distributed surge
// run (`surge k8s job`): N workers as an Indexed Job (completionMode
// Indexed, parallelism = completions = N, each pod's JOB_COMPLETION_INDEX
// set by the Job controller), and one of three ways to make one report:
//
//   - ModeCluster: a coordinator Job in the cluster (`surge burst -f
//     experiment.yaml --workers N --coordinator-listen :7070`, the file
//     from a ConfigMap) behind a headless Service the workers reach it by
//     (`surge worker --coordinator http://NAME-coordinator.NS.svc:7070`);
//   - ModeExternal: the coordinator on the user's machine
//     (--coordinator-listen HOST:PORT): no coordinator Job, the workers
//     dial HOST:PORT;
//   - ModeStatic: no coordinator; N shards (`surge burst … --shard auto/N
//     --start-at T`) each write their folder to a shared volume, and a
//     merge Job applied after them runs `surge merge`.
//
// The objects (batch/v1 Job, core/v1 Service, ConfigMap,
// PersistentVolumeClaim, Pod) are small structs of this package with the
// API's JSON names (objects.go), marshalled to YAML; the tests decode
// them strictly into the k8s.io/api types, which the binary does not link. An API key is a reference to a Secret (env valueFrom
// secretKeyRef): its value never appears in a manifest. This package is
// imported by cmd/surge only; no run links it.
package kubejob

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/surge-bench/surge/internal/field"
)

// Modes: where the coordinator runs, or none.
const (
	ModeCluster  = "cluster"  // a coordinator Job and a headless Service in the cluster
	ModeExternal = "external" // the coordinator on the user's machine (--coordinator-listen HOST:PORT)
	ModeStatic   = "static"   // no coordinator: --shard auto/N, --start-at, then surge merge
)

// Defaults of a Config's zero fields.
const (
	DefaultName          = "surge"
	DefaultNamespace     = "default"
	DefaultImageRepo     = "ghcr.io/surge-bench/surge" // tagged with the surge version
	DefaultPort          = 7070
	DefaultCPU           = "1"
	DefaultMemory        = "1Gi"
	DefaultStorage       = "1Gi"
	DefaultSecretKey     = "api-key"
	DefaultAPIKeyEnv     = "OPENAI_API_KEY"
	DefaultFetchImage    = "busybox:1.37" // has tar, which kubectl cp needs
	DefaultStartAtMargin = 3 * time.Minute
)

// ImageUID is the uid (and gid) the surge image runs as: the Dockerfile's
// USER (distroless "nonroot").
const ImageUID int64 = 65532

// Paths inside the pods.
const (
	ExperimentDir  = "/etc/surge"
	ExperimentFile = "experiment.yaml"
	ResultsDir     = "/results"
)

// Config is what `surge k8s job` writes manifests for.
type Config struct {
	Name      string // prefix of every object's name
	Namespace string
	Image     string // the surge image; DefaultImageRepo:Version when empty
	Version   string // the surge version writing the manifests
	Workers   int
	Command   string // run, burst or capacity
	// Experiment is the experiment file's content (ConfigMap data); it is
	// checked to parse as a YAML mapping. ExperimentName names it in errors.
	Experiment     []byte
	ExperimentName string
	Args           []string // more flags for the command (after --), e.g. --target URL
	// CoordinatorListen is HOST:PORT of a coordinator on the user's
	// machine (ModeExternal); empty for one in the cluster.
	CoordinatorListen string
	Static            bool      // ModeStatic
	StartAt           time.Time // static shards start together then; zero: Now + DefaultStartAtMargin
	Now               time.Time
	Port              int // the coordinator's port in the cluster

	CPU, Memory  string // requests of each pod (memory is also its limit)
	Storage      string // size of the results volume (PVC)
	StorageClass string // "" for the cluster's default

	APIKeySecret string // Secret holding the API key; "" for none
	APIKeyKey    string // its key
	APIKeyEnv    string // the env var surge reads it from
	FetchImage   string // the image of the pod that serves the results to kubectl cp
}

// Mode is the configuration's coordinator mode.
func (c *Config) Mode() string {
	switch {
	case c.Static:
		return ModeStatic
	case c.CoordinatorListen != "":
		return ModeExternal
	}
	return ModeCluster
}

// Validate fills defaults and checks c; errors are named by flag.
func (c *Config) Validate() error {
	var es field.Errors
	c.Name = cmpOr(c.Name, DefaultName)
	c.Namespace = cmpOr(c.Namespace, DefaultNamespace)
	if c.Image == "" {
		v := c.Version
		if v == "" || v == "dev" {
			v = "latest"
		}
		c.Image = DefaultImageRepo + ":" + v
	}
	c.CPU, c.Memory, c.Storage = cmpOr(c.CPU, DefaultCPU), cmpOr(c.Memory, DefaultMemory), cmpOr(c.Storage, DefaultStorage)
	c.APIKeyKey, c.APIKeyEnv = cmpOr(c.APIKeyKey, DefaultSecretKey), cmpOr(c.APIKeyEnv, DefaultAPIKeyEnv)
	c.FetchImage = cmpOr(c.FetchImage, DefaultFetchImage)
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	// Object names get suffixes up to "-coordinator" (12); a Job's name
	// also becomes a pod label, at most 63 characters.
	if !validDNSLabel(c.Name, true) || len(c.Name) > 40 {
		es.Add("name", "%q: want a DNS label of at most 40 characters (lower-case letters, digits, '-', starting with a letter)", c.Name)
	}
	if !validDNSLabel(c.Namespace, false) {
		es.Add("namespace", "%q: want a DNS label of at most 63 characters (lower-case letters, digits, '-')", c.Namespace)
	}
	if c.Workers < 1 {
		es.Add("workers", "must be ≥ 1, got %d", c.Workers)
	}
	if !slices.Contains([]string{"run", "burst", "capacity"}, c.Command) {
		es.Add("command", "%q: want run, burst or capacity", c.Command)
	}
	if c.Static && c.CoordinatorListen != "" {
		es.Add("static", "static shards have no coordinator: drop --coordinator-listen")
	}
	if c.Static && c.Command == "capacity" {
		es.Add("static", "a capacity search decides each step from the last one's results, which static shards cannot share: use a coordinator")
	}
	if c.CoordinatorListen != "" {
		if host, port, ok := strings.Cut(c.CoordinatorListen, ":"); !ok || host == "" || port == "" {
			es.Add("coordinator-listen", "%q: want HOST:PORT the pods can reach (your machine's address), e.g. 203.0.113.7:7070", c.CoordinatorListen)
		}
	}
	if len(c.Experiment) == 0 {
		if c.Mode() != ModeExternal {
			es.Add("file", "the experiment file is required (the pods read it from a ConfigMap)")
		}
	} else {
		var m map[string]any
		if err := yaml.Unmarshal(c.Experiment, &m); err != nil {
			es.Add("file", "%s: not a YAML mapping: %v", c.ExperimentName, err)
		}
	}
	for _, q := range []struct{ flag, v string }{{"cpu", c.CPU}, {"memory", c.Memory}, {"storage", c.Storage}} {
		if !validQuantity(q.v) {
			es.Add(q.flag, "%q: want a Kubernetes quantity, e.g. 500m, 2, 512Mi, 1Gi", q.v)
		}
	}
	if c.APIKeySecret != "" {
		if !validSubdomain(c.APIKeySecret) {
			es.Add("api-key-secret", "%q: want a Secret's name (lower-case letters, digits, '-', '.')", c.APIKeySecret)
		}
		if !validConfigMapKey(c.APIKeyKey) {
			es.Add("api-key-secret-key", "%q: want a Secret key (letters, digits, '-', '_', '.')", c.APIKeyKey)
		}
		if !validEnvVarName(c.APIKeyEnv) {
			es.Add("api-key-env", "%q: want an environment variable name (letters, digits, '_', '-', '.', not starting with a digit)", c.APIKeyEnv)
		}
		for _, a := range c.Args {
			if a == "--api-key-env" || strings.HasPrefix(a, "--api-key-env=") {
				es.Add("api-key-env", "set it here, not after --: it names the variable the Secret is mounted as, which every pod is told to read")
				break
			}
		}
	}
	if c.Static && !c.StartAt.IsZero() && !c.StartAt.After(c.Now) {
		// Every shard would start "at once" whenever its pod came up: not together.
		es.Add("start-at", "%s is in the past (now %s): each shard would start when its pod comes up, not together; give a time a few minutes ahead (the pods are scheduled and pull the image first), or leave it out for %s from now",
			c.StartAt.UTC().Format(time.RFC3339), c.Now.UTC().Format(time.RFC3339), DefaultStartAtMargin)
	}
	if c.Static && c.StartAt.IsZero() {
		c.StartAt = c.Now.Add(DefaultStartAtMargin).Truncate(time.Second)
	}
	return es.Err()
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// File is one manifest file: its objects, in the order kubectl applies them.
type File struct {
	Name    string // e.g. "30-workers.yaml"; a path under a subfolder for one applied later
	Objects []any
	Applied bool // applied with the first `kubectl apply -f DIR` (the folder's top level)
}

// Labels of every object; Role tells the coordinator, worker, shard,
// merge and fetch pods apart (the Service selects the coordinator's).
const (
	LabelName     = "app.kubernetes.io/name"
	LabelInstance = "app.kubernetes.io/instance"
	LabelRole     = "surge.dev/role"
)

func (c *Config) labels(role string) map[string]string {
	l := map[string]string{LabelName: "surge", LabelInstance: c.Name}
	if role != "" {
		l[LabelRole] = role
	}
	return l
}

// Names of the objects.
func (c *Config) configMap() string   { return c.Name + "-experiment" }
func (c *Config) results() string     { return c.Name + "-results" }
func (c *Config) coordinator() string { return c.Name + "-coordinator" }

// CoordinatorURL is the URL the workers are given.
func (c *Config) CoordinatorURL() string {
	if c.Mode() == ModeExternal {
		return "http://" + c.CoordinatorListen
	}
	return fmt.Sprintf("http://%s.%s.svc:%d", c.coordinator(), c.Namespace, c.Port)
}

// Files returns the manifests for c (Validate first).
func (c *Config) Files() []File {
	var fs []File
	mode := c.Mode()
	if mode != ModeExternal {
		fs = append(fs, File{Name: "00-experiment.yaml", Applied: true, Objects: []any{c.configMapObj()}})
		fs = append(fs, File{Name: "10-results.yaml", Applied: true, Objects: []any{c.pvc()}})
	}
	switch mode {
	case ModeCluster:
		fs = append(fs, File{Name: "20-coordinator.yaml", Applied: true, Objects: []any{c.service(), c.coordinatorJob()}})
		fs = append(fs, File{Name: "30-workers.yaml", Applied: true, Objects: []any{c.workerJob()}})
	case ModeExternal:
		fs = append(fs, File{Name: "30-workers.yaml", Applied: true, Objects: []any{c.workerJob()}})
	case ModeStatic:
		fs = append(fs, File{Name: "30-shards.yaml", Applied: true, Objects: []any{c.shardJob()}})
		fs = append(fs, File{Name: "later/40-merge.yaml", Objects: []any{c.mergeJob()}})
	}
	if mode != ModeExternal {
		fs = append(fs, File{Name: "later/50-fetch.yaml", Objects: []any{c.fetchPod()}})
	}
	return fs
}

func (c *Config) meta(name, role string) objectMeta {
	return objectMeta{Name: name, Namespace: c.Namespace, Labels: c.labels(role)}
}

var (
	coreV1  = typeMeta{APIVersion: "v1"}
	batchV1 = typeMeta{APIVersion: "batch/v1", Kind: "Job"}
)

func kind(t typeMeta, k string) typeMeta { t.Kind = k; return t }

func (c *Config) configMapObj() *configMap {
	return &configMap{
		typeMeta: kind(coreV1, "ConfigMap"),
		Metadata: c.meta(c.configMap(), ""),
		Data:     map[string]string{ExperimentFile: string(c.Experiment)},
	}
}

func (c *Config) pvc() *persistentVolumeClaim {
	mode := "ReadWriteOnce"
	if c.Static {
		mode = "ReadWriteMany" // shards on several nodes write to it at once
	}
	p := &persistentVolumeClaim{
		typeMeta: kind(coreV1, "PersistentVolumeClaim"),
		Metadata: c.meta(c.results(), ""),
		Spec: pvcSpec{
			AccessModes: []string{mode},
			Resources:   resources{Requests: resourceList{"storage": c.Storage}},
		},
	}
	if c.StorageClass != "" {
		p.Spec.StorageClassName = &c.StorageClass
	}
	return p
}

func (c *Config) service() *service {
	return &service{
		typeMeta: kind(coreV1, "Service"),
		Metadata: c.meta(c.coordinator(), "coordinator"),
		Spec: serviceSpec{
			ClusterIP: "None", // headless: the name resolves to the coordinator pod
			Selector:  c.labels("coordinator"),
			Ports:     []servicePort{{Name: "coordinator", Port: c.Port, TargetPort: c.Port, Protocol: "TCP"}},
			// Workers may resolve the name before the coordinator is Ready.
			PublishNotReadyAddresses: true,
		},
	}
}

// container is the surge container of every Job, with the API key from
// the Secret when one is named.
func (c *Config) container(args []string, mounts ...volumeMount) container {
	ct := container{
		Name:            "surge",
		Image:           c.Image,
		Args:            args,
		ImagePullPolicy: "IfNotPresent",
		Env:             []envVar{{Name: "POD_NAME", ValueFrom: &envVarSource{FieldRef: &fieldRef{FieldPath: "metadata.name"}}}},
		Resources: resources{
			Requests: resourceList{"cpu": c.CPU, "memory": c.Memory},
			Limits:   resourceList{"memory": c.Memory},
		},
		VolumeMounts: mounts,
	}
	if c.APIKeySecret != "" {
		ct.Env = append(ct.Env, envVar{Name: c.APIKeyEnv, ValueFrom: &envVarSource{
			SecretKeyRef: &secretKeyRef{Name: c.APIKeySecret, Key: c.APIKeyKey}}})
	}
	return ct
}

var (
	experimentMount = volumeMount{Name: "experiment", MountPath: ExperimentDir, ReadOnly: true}
	resultsMount    = volumeMount{Name: "results", MountPath: ResultsDir}
)

func (c *Config) volumes() []volume {
	return []volume{
		{Name: "experiment", ConfigMap: &configMapSource{Name: c.configMap()}},
		{Name: "results", PersistentVolumeClaim: &pvcSource{ClaimName: c.results()}},
	}
}

func ptr[T any](v T) *T { return &v }

// job is a Job of n pods (Indexed when n > 1 or indexed).
func (c *Config) job(name, role string, n int, indexed bool, spec podSpec) *job {
	spec.RestartPolicy = "Never"
	// The Dockerfile's user; fsGroup makes the results volume writable to it.
	spec.SecurityContext = &podSecurityContext{RunAsUser: ptr(ImageUID), RunAsGroup: ptr(ImageUID), RunAsNonRoot: ptr(true), FSGroup: ptr(ImageUID)}
	j := &job{
		typeMeta: batchV1,
		Metadata: c.meta(name, role),
		Spec: jobSpec{
			Parallelism: ptr(n),
			Completions: ptr(n),
			// A failed generator is not run again: its share of the
			// schedule is at its own time or never (a coordinator counts a
			// lost worker's arrivals as generator_drop).
			BackoffLimit: ptr(0),
			Template: podTemplate{
				Metadata: objectMeta{Labels: c.labels(role)},
				Spec:     spec,
			},
		},
	}
	if indexed {
		j.Spec.CompletionMode = "Indexed"
	}
	return j
}

// keyArgs tells a surge that sends requests which env var the Secret's
// key is in (surge run's --api-key-env): a worker reads its key from its
// own environment, which the coordinator never sends.
func (c *Config) keyArgs() []string {
	if c.APIKeySecret == "" {
		return nil
	}
	return []string{"--api-key-env", c.APIKeyEnv}
}

// experimentArgs is the experiment command with the file from the ConfigMap.
func (c *Config) experimentArgs(more ...string) []string {
	args := []string{c.Command, "--file", path.Join(ExperimentDir, ExperimentFile)}
	args = append(args, more...)
	args = append(args, c.keyArgs()...)
	return append(args, c.Args...)
}

// CoordinatorArgs is the coordinator's command line (in the cluster, or
// the one the user runs on their machine in ModeExternal, whose key is in
// the user's own environment).
func (c *Config) CoordinatorArgs() []string {
	if c.Mode() == ModeExternal {
		// The file as the user named it to -f (here, not in a pod); none
		// without -f: the command then runs on the flags after -- alone.
		args := []string{c.Command}
		if c.ExperimentName != "" {
			args = append(args, "--file", c.ExperimentName)
		}
		return append(append(args, "--workers", strconv.Itoa(c.Workers),
			"--coordinator-listen", ":"+portOf(c.CoordinatorListen), "--out", c.Name), c.Args...)
	}
	return c.experimentArgs("--workers", strconv.Itoa(c.Workers), "--coordinator-listen", ":"+strconv.Itoa(c.Port),
		"--out", path.Join(ResultsDir, c.Name))
}

func portOf(hostPort string) string {
	i := strings.LastIndexByte(hostPort, ':')
	return hostPort[i+1:]
}

func (c *Config) coordinatorJob() *job {
	ct := c.container(c.CoordinatorArgs(), experimentMount, resultsMount)
	ct.Ports = []containerPort{{Name: "coordinator", ContainerPort: c.Port, Protocol: "TCP"}}
	return c.job(c.coordinator(), "coordinator", 1, false, podSpec{
		Containers: []container{ct},
		Volumes:    c.volumes(),
	})
}

// WorkerArgs is each worker's command line ($(POD_NAME) is expanded by
// the kubelet from the container's env), with the env var of its key.
func (c *Config) WorkerArgs() []string {
	return append([]string{"worker", "--coordinator", c.CoordinatorURL(), "--name", "$(POD_NAME)"}, c.keyArgs()...)
}

func (c *Config) workerJob() *job {
	j := c.job(c.Name+"-workers", "worker", c.Workers, true, podSpec{
		Containers: []container{c.container(c.WorkerArgs())},
	})
	// A worker started before the coordinator listens exits 3 naming the
	// address: its pod is replaced without counting as a failure, until
	// the coordinator is up.
	j.Spec.PodFailurePolicy = &podFailurePolicy{Rules: []podFailurePolicyRule{{
		Action:      "Ignore",
		OnExitCodes: &onExitCodes{ContainerName: "surge", Operator: "In", Values: []int{3}},
	}}}
	return j
}

// ShardArgs is each static shard's command line; $(JOB_COMPLETION_INDEX)
// is the Indexed Job's env var, expanded by the kubelet.
func (c *Config) ShardArgs() []string {
	return c.experimentArgs("--shard", "auto/"+strconv.Itoa(c.Workers), "--start-at", c.StartAt.UTC().Format(time.RFC3339),
		"--out", path.Join(ResultsDir, c.Name, "shard-$(JOB_COMPLETION_INDEX)"))
}

func (c *Config) shardJob() *job {
	j := c.job(c.Name+"-shards", "shard", c.Workers, true, podSpec{
		Containers: []container{c.container(c.ShardArgs(), experimentMount, resultsMount)},
		Volumes:    c.volumes(),
	})
	// A shard exits 1 when its SLO verdict fails, after writing its whole
	// folder: a result, not a crash. With backoffLimit 0 the first such
	// pod would fail the Job and the controller would terminate the
	// shards still running. batch/v1's backoffLimitPerIndex 0 (no
	// maxFailedIndexes) instead fails only that index, never retried (a
	// retried shard would replay its share at the wrong time), lets every
	// other index run to its end, and marks the Job Failed (reason
	// FailedIndexes) only when all have ended, so merge sees every folder.
	// No podFailurePolicy rule does this: Ignore re-creates the pod (the
	// shard would run again), Count counts toward backoffLimit.
	// backoffLimit is left unset: with a per-index limit it defaults to
	// "no global limit".
	j.Spec.BackoffLimit = nil
	j.Spec.BackoffLimitPerIndex = ptr(0)
	return j
}

// MergeArgs is the merge Job's command line.
func (c *Config) MergeArgs() []string {
	args := []string{"merge"}
	for i := range c.Workers {
		args = append(args, path.Join(ResultsDir, c.Name, "shard-"+strconv.Itoa(i)))
	}
	return append(args, "--out", path.Join(ResultsDir, c.Name, "merged"))
}

func (c *Config) mergeJob() *job {
	ct := c.container(c.MergeArgs(), resultsMount)
	ct.Env = ct.Env[:1] // merging sends nothing: no key
	return c.job(c.Name+"-merge", "merge", 1, false, podSpec{
		Containers: []container{ct},
		Volumes:    c.volumes()[1:],
	})
}

// fetchPod holds the results volume open for kubectl cp (which needs tar
// in the container, which the surge image need not have).
func (c *Config) fetchPod() *pod {
	return &pod{
		typeMeta: kind(coreV1, "Pod"),
		Metadata: c.meta(c.Name+"-fetch", "fetch"),
		Spec: podSpec{
			RestartPolicy: "Never",
			Containers: []container{{
				Name: "fetch", Image: c.FetchImage, Command: []string{"sleep", "3600"},
				VolumeMounts: []volumeMount{resultsMount},
				Resources:    resources{Requests: resourceList{"cpu": "10m", "memory": "16Mi"}},
			}},
			Volumes: c.volumes()[1:],
		},
	}
}

// Render returns one file's YAML: its objects as documents separated by
// "---", each marshalled through its JSON tags (so omitted fields stay
// omitted) and written as YAML with sorted keys.
func Render(f File) ([]byte, error) {
	var b bytes.Buffer
	for i, o := range f.Objects {
		js, err := json.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("kubejob: %s: %w", f.Name, err)
		}
		var v any
		if err := yaml.Unmarshal(js, &v); err != nil { // JSON is YAML
			return nil, fmt.Errorf("kubejob: %s: %w", f.Name, err)
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(v); err != nil {
			return nil, fmt.Errorf("kubejob: %s: %w", f.Name, err)
		}
		enc.Close()
	}
	return b.Bytes(), nil
}
