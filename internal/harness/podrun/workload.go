// Package podrun runs the pods of a composed Armada as local processes:
// each Armada container becomes its release's own binary, run with the
// container's args, environment and mounted Secrets and ConfigMaps exactly
// as composed, in a root of its own (PodCommand) whose /etc/hosts resolves
// the composed Service names to loopback addresses (Names). The Armada
// conformance suite (test/conformance) runs renders with it; the job-flow
// suite (test/jobflow) runs what Crossplane composed in a cluster.
package podrun

import (
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A Workload is a composed Deployment, StatefulSet or Job.
type Workload struct {
	// Kind and Name identify the workload, e.g. "Deployment/armada-server".
	Kind, Name, Namespace string
	// Pod is its pod template's spec, Labels and Annotations its labels
	// and annotations (a changed config hash annotation rolls the pod).
	Pod         corev1.PodSpec
	Labels      map[string]string
	Annotations map[string]string
	// Cluster is the providerConfigRef name of the worker cluster an
	// executor's Object puts it in; empty in this cluster.
	Cluster string
}

// ID is Kind/Name.
func (w Workload) ID() string { return w.Kind + "/" + w.Name }

// Binaries are Armada's component binaries, one per image.
var Binaries = []string{"server", "scheduler", "scheduleringester", "lookout", "lookoutingester", "eventingester", "executor", "binoculars"}

// components maps an Armada image name to the binary it runs. Every Armada
// image's entrypoint is its binary, so a container's args are the binary's.
var components = map[string]string{
	"armada-server":             "server",
	"armada-scheduler":          "scheduler",
	"armada-scheduler-ingester": "scheduleringester",
	"armada-lookout":            "lookout",
	"armada-lookout-ingester":   "lookoutingester",
	"armada-event-ingester":     "eventingester",
	"armada-executor":           "executor",
	"armada-binoculars":         "binoculars",
}

// ComponentForImage returns the Armada binary an image reference such as
// registry.example.com:5000/gresearch/armada-server:0.22.7 runs, and the
// image's tag.
func ComponentForImage(image string) (component, tag string, ok bool) {
	ref, _, _ := strings.Cut(image, "@")
	name := path.Base(ref)
	if i := strings.LastIndex(name, ":"); i >= 0 {
		name, tag = name[:i], name[i+1:]
	}
	component, ok = components[name]
	return component, tag, ok
}
