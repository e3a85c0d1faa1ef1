package kubejob

// The objects surge writes, as small structs of this package: only the
// fields surge sets, with the Kubernetes API's JSON names and its
// omitempty. They are not k8s.io/api types so that `surge k8s job`, which
// only writes YAML, does not link k8s.io/api and apimachinery into the
// binary (+11 MB, +42%); the tests decode every document strictly into
// the k8s.io/api types (unknown fields refused), so a wrong name, nesting
// or type here fails a test.

type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

type objectMeta struct {
	Name      string            `json:"name,omitempty"`
	Namespace string            `json:"namespace,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// resourceList maps a resource name (cpu, memory, storage) to a quantity
// as the user wrote it (checked by quantityRe; the API server stores its
// canonical form, e.g. 1000m as 1).
type resourceList map[string]string

type resources struct {
	Limits   resourceList `json:"limits,omitempty"`
	Requests resourceList `json:"requests,omitempty"`
}

type configMap struct {
	typeMeta
	Metadata objectMeta        `json:"metadata"`
	Data     map[string]string `json:"data,omitempty"`
}

type persistentVolumeClaim struct {
	typeMeta
	Metadata objectMeta `json:"metadata"`
	Spec     pvcSpec    `json:"spec"`
}

type pvcSpec struct {
	AccessModes      []string  `json:"accessModes,omitempty"`
	Resources        resources `json:"resources"`
	StorageClassName *string   `json:"storageClassName,omitempty"`
}

type service struct {
	typeMeta
	Metadata objectMeta  `json:"metadata"`
	Spec     serviceSpec `json:"spec"`
}

type serviceSpec struct {
	Ports                    []servicePort     `json:"ports,omitempty"`
	Selector                 map[string]string `json:"selector,omitempty"`
	ClusterIP                string            `json:"clusterIP,omitempty"`
	PublishNotReadyAddresses bool              `json:"publishNotReadyAddresses,omitempty"`
}

type servicePort struct {
	Name       string `json:"name,omitempty"`
	Protocol   string `json:"protocol,omitempty"`
	Port       int    `json:"port"`
	TargetPort int    `json:"targetPort,omitempty"` // an IntOrString; surge writes the number
}

type job struct {
	typeMeta
	Metadata objectMeta `json:"metadata"`
	Spec     jobSpec    `json:"spec"`
}

type jobSpec struct {
	Parallelism      *int              `json:"parallelism,omitempty"`
	Completions      *int              `json:"completions,omitempty"`
	PodFailurePolicy *podFailurePolicy `json:"podFailurePolicy,omitempty"`
	BackoffLimit     *int              `json:"backoffLimit,omitempty"`
	// BackoffLimitPerIndex (Indexed Jobs): a failed index is not retried
	// past it, and does not fail the other indexes.
	BackoffLimitPerIndex *int        `json:"backoffLimitPerIndex,omitempty"`
	Template             podTemplate `json:"template"`
	CompletionMode       string      `json:"completionMode,omitempty"`
}

type podFailurePolicy struct {
	Rules []podFailurePolicyRule `json:"rules"`
}

type podFailurePolicyRule struct {
	Action      string       `json:"action"`
	OnExitCodes *onExitCodes `json:"onExitCodes,omitempty"`
}

type onExitCodes struct {
	ContainerName string `json:"containerName,omitempty"`
	Operator      string `json:"operator"`
	Values        []int  `json:"values"`
}

type podTemplate struct {
	Metadata objectMeta `json:"metadata"`
	Spec     podSpec    `json:"spec"`
}

type pod struct {
	typeMeta
	Metadata objectMeta `json:"metadata"`
	Spec     podSpec    `json:"spec"`
}

type podSpec struct {
	Volumes         []volume            `json:"volumes,omitempty"`
	Containers      []container         `json:"containers"`
	RestartPolicy   string              `json:"restartPolicy,omitempty"`
	SecurityContext *podSecurityContext `json:"securityContext,omitempty"`
}

type podSecurityContext struct {
	RunAsUser    *int64 `json:"runAsUser,omitempty"`
	RunAsGroup   *int64 `json:"runAsGroup,omitempty"`
	RunAsNonRoot *bool  `json:"runAsNonRoot,omitempty"`
	FSGroup      *int64 `json:"fsGroup,omitempty"`
}

type volume struct {
	Name                  string           `json:"name"`
	ConfigMap             *configMapSource `json:"configMap,omitempty"`
	PersistentVolumeClaim *pvcSource       `json:"persistentVolumeClaim,omitempty"`
}

type configMapSource struct {
	Name string `json:"name,omitempty"`
}

type pvcSource struct {
	ClaimName string `json:"claimName"`
}

type container struct {
	Name            string          `json:"name"`
	Image           string          `json:"image,omitempty"`
	Command         []string        `json:"command,omitempty"`
	Args            []string        `json:"args,omitempty"`
	Ports           []containerPort `json:"ports,omitempty"`
	Env             []envVar        `json:"env,omitempty"`
	Resources       resources       `json:"resources"`
	VolumeMounts    []volumeMount   `json:"volumeMounts,omitempty"`
	ImagePullPolicy string          `json:"imagePullPolicy,omitempty"`
}

type containerPort struct {
	Name          string `json:"name,omitempty"`
	ContainerPort int    `json:"containerPort"`
	Protocol      string `json:"protocol,omitempty"`
}

type envVar struct {
	Name      string        `json:"name"`
	Value     string        `json:"value,omitempty"`
	ValueFrom *envVarSource `json:"valueFrom,omitempty"`
}

type envVarSource struct {
	FieldRef     *fieldRef     `json:"fieldRef,omitempty"`
	SecretKeyRef *secretKeyRef `json:"secretKeyRef,omitempty"`
}

type fieldRef struct {
	FieldPath string `json:"fieldPath"`
}

type secretKeyRef struct {
	Name string `json:"name,omitempty"`
	Key  string `json:"key"`
}

type volumeMount struct {
	Name      string `json:"name"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
	MountPath string `json:"mountPath"`
}
