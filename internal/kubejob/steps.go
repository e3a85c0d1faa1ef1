package kubejob

import (
	"fmt"
	"path"
	"strings"
)

// Steps returns the commands that run the manifests written into dir and
// copy the results out, in order, each with a comment line.
func (c *Config) Steps(dir string) []string {
	k := "kubectl -n " + c.Namespace
	var s []string
	add := func(comment string, cmds ...string) {
		s = append(s, "# "+comment)
		s = append(s, cmds...)
	}
	if c.APIKeySecret != "" {
		add("the API key, once (its value stays in the Secret; the manifests only name it):",
			fmt.Sprintf("%s create secret generic %s --from-literal=%s=\"$%s\"", k, c.APIKeySecret, c.APIKeyKey, c.APIKeyEnv))
	}
	fetch := func() {
		add("copy the results out through a pod that mounts the volume:",
			fmt.Sprintf("%s apply -f %s", k, path.Join(dir, "later", "50-fetch.yaml")),
			fmt.Sprintf("%s wait --for=condition=Ready pod/%s-fetch --timeout=5m", k, c.Name),
			fmt.Sprintf("%s cp %s-fetch:%s ./%s-results", k, c.Name, path.Join(ResultsDir, c.Name), c.Name),
			fmt.Sprintf("surge report ./%s", c.resultFolder()))
		add("clean up (the volume too, once the results are copied):",
			fmt.Sprintf("%s delete -f %s -f %s", k, dir, path.Join(dir, "later")))
	}
	switch c.Mode() {
	case ModeCluster:
		add("start the coordinator and the workers:", fmt.Sprintf("%s apply -f %s", k, dir))
		add("follow the coordinator (the report's lines and the exit line are its log), then wait for its Job to end — Complete, or Failed when an SLO failed (exit 1; the report is written either way):",
			fmt.Sprintf("%s logs -f job/%s", k, c.coordinator()),
			c.waitEnd(k, "job/"+c.coordinator()))
		fetch()
	case ModeExternal:
		add("on this machine, start the coordinator first: the pods must reach it at "+c.CoordinatorListen+
			"; it must reach the target itself (it sizes the prompts against it) and any --metrics-url, and hands its --target to the workers — so a target address both this machine and the pods reach, not a cluster-internal Service name:",
			"surge "+shellJoin(c.CoordinatorArgs()))
		add("then start the workers:", fmt.Sprintf("%s apply -f %s", k, dir))
		add("the coordinator writes ./"+c.Name+" and its report here; clean up:", fmt.Sprintf("%s delete -f %s", k, dir))
	case ModeStatic:
		add(fmt.Sprintf("start the shards before %s (they begin together then):", c.StartAt.UTC().Format("2006-01-02T15:04:05Z")),
			fmt.Sprintf("%s apply -f %s", k, dir))
		add("wait until every shard has ended: the Job ends Complete, or Failed (reason FailedIndexes) when a shard's SLO failed (exit 1) — that shard's folder is written all the same, and the other shards are not stopped:",
			c.waitEnd(k, "job/"+c.Name+"-shards"))
		add("merge the shards into one run folder:",
			fmt.Sprintf("%s apply -f %s", k, path.Join(dir, "later", "40-merge.yaml")),
			c.waitEnd(k, "job/"+c.Name+"-merge"))
		fetch()
	}
	return s
}

// resultFolder is the folder surge report is given after the copy: the
// name plus -results, never the binary's own name (./surge).
func (c *Config) resultFolder() string {
	if c.Mode() == ModeStatic {
		return c.Name + "-results/merged"
	}
	return c.Name + "-results"
}

// waitEnd is a command that returns when the Job ends, Complete or
// Failed: `kubectl wait --for=condition=complete` alone would block to its
// timeout on a Failed Job, and kubectl wait has no "either" condition. It
// polls the conditions whose status is True (FailureTarget and
// SuccessCriteriaMet precede the terminal ones; neither matches) and
// prints the one reached.
func (c *Config) waitEnd(k, obj string) string {
	return fmt.Sprintf(`until %s get %s -o jsonpath='{.status.conditions[?(@.status=="True")].type}' | grep -woE 'Complete|Failed'; do sleep 10; done`, k, obj)
}

// shellJoin joins args for a shell, quoting those that need it.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}
