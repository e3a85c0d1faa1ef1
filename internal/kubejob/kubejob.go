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
// The objects are k8s.io/api types (batch/v1 Job, core/v1 Service,
// ConfigMap, PersistentVolumeClaim, Pod) marshalled through their JSON
// tags to YAML. An API key is a reference to a Secret (env valueFrom
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
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

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
	if errs := validation.IsDNS1035Label(c.Name); len(errs) > 0 || len(c.Name) > 40 {
		es.Add("name", "%q: want a DNS label of at most 40 characters (lower-case letters, digits, '-', starting with a letter)", c.Name)
	}
	if errs := validation.IsDNS1123Label(c.Namespace); len(errs) > 0 {
		es.Add("namespace", "%q: %s", c.Namespace, strings.Join(errs, "; "))
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
		if _, err := resource.ParseQuantity(q.v); err != nil {
			es.Add(q.flag, "%q: %v", q.v, err)
		}
	}
	if c.APIKeySecret != "" {
		if errs := validation.IsDNS1123Subdomain(c.APIKeySecret); len(errs) > 0 {
			es.Add("api-key-secret", "%q: %s", c.APIKeySecret, strings.Join(errs, "; "))
		}
		if errs := validation.IsConfigMapKey(c.APIKeyKey); len(errs) > 0 {
			es.Add("api-key-secret-key", "%q: %s", c.APIKeyKey, strings.Join(errs, "; "))
		}
		if errs := validation.IsEnvVarName(c.APIKeyEnv); len(errs) > 0 {
			es.Add("api-key-env", "%q: %s", c.APIKeyEnv, strings.Join(errs, "; "))
		}
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

func (c *Config) meta(name, role string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: c.labels(role)}
}

func (c *Config) configMapObj() *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: c.meta(c.configMap(), ""),
		Data:       map[string]string{ExperimentFile: string(c.Experiment)},
	}
}

func (c *Config) pvc() *corev1.PersistentVolumeClaim {
	mode := corev1.ReadWriteOnce
	if c.Static {
		mode = corev1.ReadWriteMany // shards on several nodes write to it at once
	}
	p := &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: c.meta(c.results(), ""),
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{mode},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(c.Storage)}},
		},
	}
	if c.StorageClass != "" {
		p.Spec.StorageClassName = &c.StorageClass
	}
	return p
}

func (c *Config) service() *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: c.meta(c.coordinator(), "coordinator"),
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, // headless: the name resolves to the coordinator pod
			Selector:  c.labels("coordinator"),
			Ports:     []corev1.ServicePort{{Name: "coordinator", Port: int32(c.Port), TargetPort: intstr.FromInt32(int32(c.Port)), Protocol: corev1.ProtocolTCP}},
			// Workers may resolve the name before the coordinator is Ready.
			PublishNotReadyAddresses: true,
		},
	}
}

// container is the surge container of every Job, with the API key from
// the Secret when one is named.
func (c *Config) container(args []string, mounts ...corev1.VolumeMount) corev1.Container {
	ct := corev1.Container{
		Name:            "surge",
		Image:           c.Image,
		Args:            args,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Env: []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(c.CPU), corev1.ResourceMemory: resource.MustParse(c.Memory)},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(c.Memory)},
		},
		VolumeMounts: mounts,
	}
	if c.APIKeySecret != "" {
		ct.Env = append(ct.Env, corev1.EnvVar{Name: c.APIKeyEnv, ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: c.APIKeySecret}, Key: c.APIKeyKey}}})
	}
	return ct
}

var (
	experimentMount = corev1.VolumeMount{Name: "experiment", MountPath: ExperimentDir, ReadOnly: true}
	resultsMount    = corev1.VolumeMount{Name: "results", MountPath: ResultsDir}
)

func (c *Config) volumes() []corev1.Volume {
	return []corev1.Volume{
		{Name: "experiment", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: c.configMap()}}}},
		{Name: "results", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.results()}}},
	}
}

func ptr[T any](v T) *T { return &v }

// job is a Job of n pods (Indexed when n > 1 or indexed).
func (c *Config) job(name, role string, n int, indexed bool, pod corev1.PodSpec) *batchv1.Job {
	pod.RestartPolicy = corev1.RestartPolicyNever
	j := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: c.meta(name, role),
		Spec: batchv1.JobSpec{
			Parallelism: ptr(int32(n)),
			Completions: ptr(int32(n)),
			// A failed generator is not run again: its share of the
			// schedule is at its own time or never (a coordinator counts a
			// lost worker's arrivals as generator_drop).
			BackoffLimit: ptr(int32(0)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: c.labels(role)},
				Spec:       pod,
			},
		},
	}
	if indexed {
		j.Spec.CompletionMode = ptr(batchv1.IndexedCompletion)
	}
	return j
}

// experimentArgs is the experiment command with the file from the ConfigMap.
func (c *Config) experimentArgs(more ...string) []string {
	args := []string{c.Command, "--file", path.Join(ExperimentDir, ExperimentFile)}
	args = append(args, more...)
	return append(args, c.Args...)
}

// CoordinatorArgs is the coordinator's command line (in the cluster, or
// the one the user runs on their machine in ModeExternal).
func (c *Config) CoordinatorArgs() []string {
	if c.Mode() == ModeExternal {
		return append([]string{c.Command, "--file", cmpOr(c.ExperimentName, "experiment.yaml"), "--workers", strconv.Itoa(c.Workers),
			"--coordinator-listen", ":" + portOf(c.CoordinatorListen), "--out", c.Name}, c.Args...)
	}
	return c.experimentArgs("--workers", strconv.Itoa(c.Workers), "--coordinator-listen", ":"+strconv.Itoa(c.Port),
		"--out", path.Join(ResultsDir, c.Name))
}

func portOf(hostPort string) string {
	i := strings.LastIndexByte(hostPort, ':')
	return hostPort[i+1:]
}

func (c *Config) coordinatorJob() *batchv1.Job {
	ct := c.container(c.CoordinatorArgs(), experimentMount, resultsMount)
	ct.Ports = []corev1.ContainerPort{{Name: "coordinator", ContainerPort: int32(c.Port), Protocol: corev1.ProtocolTCP}}
	return c.job(c.coordinator(), "coordinator", 1, false, corev1.PodSpec{
		Containers: []corev1.Container{ct},
		Volumes:    c.volumes(),
	})
}

// WorkerArgs is each worker's command line ($(POD_NAME) is expanded by
// the kubelet from the container's env).
func (c *Config) WorkerArgs() []string {
	return []string{"worker", "--coordinator", c.CoordinatorURL(), "--name", "$(POD_NAME)"}
}

func (c *Config) workerJob() *batchv1.Job {
	j := c.job(c.Name+"-workers", "worker", c.Workers, true, corev1.PodSpec{
		Containers: []corev1.Container{c.container(c.WorkerArgs())},
	})
	// A worker started before the coordinator listens exits 3 naming the
	// address: its pod is replaced without counting as a failure, until
	// the coordinator is up.
	j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
		Action:      batchv1.PodFailurePolicyActionIgnore,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{ContainerName: ptr("surge"), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{3}},
	}}}
	return j
}

// ShardArgs is each static shard's command line; $(JOB_COMPLETION_INDEX)
// is the Indexed Job's env var, expanded by the kubelet.
func (c *Config) ShardArgs() []string {
	return c.experimentArgs("--shard", "auto/"+strconv.Itoa(c.Workers), "--start-at", c.StartAt.UTC().Format(time.RFC3339),
		"--out", path.Join(ResultsDir, c.Name, "shard-$(JOB_COMPLETION_INDEX)"))
}

func (c *Config) shardJob() *batchv1.Job {
	return c.job(c.Name+"-shards", "shard", c.Workers, true, corev1.PodSpec{
		Containers: []corev1.Container{c.container(c.ShardArgs(), experimentMount, resultsMount)},
		Volumes:    c.volumes(),
	})
}

// MergeArgs is the merge Job's command line.
func (c *Config) MergeArgs() []string {
	args := []string{"merge"}
	for i := range c.Workers {
		args = append(args, path.Join(ResultsDir, c.Name, "shard-"+strconv.Itoa(i)))
	}
	return append(args, "--out", path.Join(ResultsDir, c.Name, "merged"))
}

func (c *Config) mergeJob() *batchv1.Job {
	ct := c.container(c.MergeArgs(), resultsMount)
	ct.Env = ct.Env[:1] // merging sends nothing: no key
	return c.job(c.Name+"-merge", "merge", 1, false, corev1.PodSpec{
		Containers: []corev1.Container{ct},
		Volumes:    c.volumes()[1:],
	})
}

// fetchPod holds the results volume open for kubectl cp (which needs tar
// in the container, which the surge image need not have).
func (c *Config) fetchPod() *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: c.meta(c.Name+"-fetch", "fetch"),
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "fetch", Image: c.FetchImage, Command: []string{"sleep", "3600"},
				VolumeMounts: []corev1.VolumeMount{resultsMount},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}},
			}},
			Volumes: c.volumes()[1:],
		},
	}
}

// Render returns one file's YAML: its objects as documents separated by
// "---", each marshalled through the k8s.io/api JSON tags (so omitted
// fields stay omitted) and written as YAML.
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
		dropNullCreation(v)
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

// dropNullCreation removes the "creationTimestamp: null" and empty
// "status" that ObjectMeta and the types' zero status marshal to: noise
// in a manifest a person reads.
func dropNullCreation(v any) {
	switch m := v.(type) {
	case map[string]any:
		for k, x := range m {
			if (k == "creationTimestamp" && x == nil) || (k == "status" && isEmpty(x)) {
				delete(m, k)
				continue
			}
			dropNullCreation(x)
		}
	case []any:
		for _, x := range m {
			dropNullCreation(x)
		}
	}
}

func isEmpty(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for _, x := range m {
		if !isEmpty(x) {
			return false
		}
	}
	return true
}
