package conformance

import (
	"maps"
	"os"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
)

// SecretRef selects one key of a Secret.
type SecretRef struct{ Name, Key string }

// Render is one parsed `crossplane composition Render` output.
type Render struct {
	// XR is the first document.
	XR *unstructured.Unstructured
	// Objects are the composed resources, with provider-kubernetes Objects
	// unwrapped to the manifests they carry.
	Objects []*unstructured.Unstructured
	// Wrappers are the provider-kubernetes Objects themselves.
	Wrappers []*unstructured.Unstructured
	// wrappedBy maps an unwrapped manifest in Objects to its Object.
	wrappedBy map[*unstructured.Unstructured]*unstructured.Unstructured
}

// ParseRender splits a YAML stream into the XR and the composed objects.
// render.crossplane.io documents (Results, Context) are dropped.
func ParseRender(b []byte) (*Render, error) {
	docs, err := manifest.Split(b)
	if err != nil {
		return nil, err
	}
	out := &Render{wrappedBy: map[*unstructured.Unstructured]*unstructured.Unstructured{}}
	for _, obj := range docs {
		u := &unstructured.Unstructured{Object: obj}
		if out.XR == nil {
			out.XR = u
			continue
		}
		if strings.HasPrefix(u.GetAPIVersion(), "render.crossplane.io/") {
			continue
		}
		// provider-kubernetes wraps a manifest in an Object.
		if m, ok, _ := unstructured.NestedMap(obj, "spec", "forProvider", "manifest"); ok && u.GetKind() == "Object" {
			out.Wrappers = append(out.Wrappers, u)
			w := u
			u = &unstructured.Unstructured{Object: m}
			out.wrappedBy[u] = w
		}
		out.Objects = append(out.Objects, u)
	}
	if out.XR == nil {
		return nil, errors.New("render output is empty")
	}
	return out, nil
}

// LoadRender parses a render output file.
func LoadRender(file string) (*Render, error) {
	b, err := os.ReadFile(file) //nolint:gosec // The test's own input files.
	if err != nil {
		return nil, errors.Wrap(err, "cannot read render output")
	}
	r, err := ParseRender(b)
	return r, errors.Wrapf(err, "cannot parse %s", file)
}

// Workloads returns the composed Deployments, StatefulSets and Jobs, Jobs
// first, otherwise in render order.
func (r *Render) Workloads() ([]podrun.Workload, error) {
	var jobs, others []podrun.Workload
	for _, u := range r.Objects {
		var spec corev1.PodSpec
		var labels map[string]string
		var err error
		switch u.GetKind() {
		case "Deployment":
			d := &appsv1.Deployment{}
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d)
			spec, labels = d.Spec.Template.Spec, d.Spec.Template.Labels
		case "StatefulSet":
			s := &appsv1.StatefulSet{}
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, s)
			spec, labels = s.Spec.Template.Spec, s.Spec.Template.Labels
		case "Job":
			j := &batchv1.Job{}
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, j)
			spec, labels = j.Spec.Template.Spec, j.Spec.Template.Labels
		default:
			continue
		}
		if err != nil {
			return nil, errors.Wrapf(err, "cannot decode %s %s", u.GetKind(), u.GetName())
		}
		w := podrun.Workload{Kind: u.GetKind(), Name: u.GetName(), Namespace: u.GetNamespace(), Pod: spec, Labels: labels, Cluster: r.workerCluster(u)}
		if w.Kind == "Job" {
			jobs = append(jobs, w)
		} else {
			others = append(others, w)
		}
	}
	return append(jobs, others...), nil
}

// workerCluster returns the providerConfigRef name of the Object wrapping
// u if it is a worker cluster an executor of the XR names
// (spec.executors[].cluster.providerConfigRef), else "".
func (r *Render) workerCluster(u *unstructured.Unstructured) string {
	w, ok := r.wrappedBy[u]
	if !ok {
		return ""
	}
	kind, _, _ := unstructured.NestedString(w.Object, "spec", "providerConfigRef", "kind")
	name, _, _ := unstructured.NestedString(w.Object, "spec", "providerConfigRef", "name")
	executors, _, _ := unstructured.NestedSlice(r.XR.Object, "spec", "executors")
	for _, e := range executors {
		m, _ := e.(map[string]any)
		ref, _, _ := unstructured.NestedStringMap(m, "cluster", "providerConfigRef")
		if ref["kind"] == kind && ref["name"] == name && name != "" {
			return name
		}
	}
	return ""
}

// RemoteManifests returns the manifests the Objects for a worker cluster
// carry.
func (r *Render) RemoteManifests(cluster string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, u := range r.Objects {
		if cluster != "" && r.workerCluster(u) == cluster {
			out = append(out, u)
		}
	}
	return out
}

// Secret returns a rendered Secret's data, decoded, merged with its
// stringData as the API server would.
func (r *Render) Secret(name string) (map[string][]byte, bool, error) {
	for _, u := range r.Objects {
		if u.GetKind() != "Secret" || u.GetName() != name {
			continue
		}
		s := &corev1.Secret{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, s); err != nil {
			return nil, false, errors.Wrapf(err, "cannot decode Secret %s", name)
		}
		data := maps.Clone(s.Data)
		if data == nil {
			data = map[string][]byte{}
		}
		for k, v := range s.StringData {
			data[k] = []byte(v)
		}
		return data, true, nil
	}
	return nil, false, nil
}

// ConfigMap returns a rendered ConfigMap's data and binaryData.
func (r *Render) ConfigMap(name string) (map[string][]byte, bool, error) {
	for _, u := range r.Objects {
		if u.GetKind() != "ConfigMap" || u.GetName() != name {
			continue
		}
		cm := &corev1.ConfigMap{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cm); err != nil {
			return nil, false, errors.Wrapf(err, "cannot decode ConfigMap %s", name)
		}
		data := map[string][]byte{}
		for k, v := range cm.Data {
			data[k] = []byte(v)
		}
		maps.Copy(data, cm.BinaryData)
		return data, true, nil
	}
	return nil, false, nil
}

// XRString returns a string field of the XR, or def if it is unset.
func (r *Render) XRString(def string, fields ...string) string {
	if s, ok, _ := unstructured.NestedString(r.XR.Object, fields...); ok && s != "" {
		return s
	}
	return def
}

// XRSecretRef returns a SecretKeyRef field of the XR's spec.
func (r *Render) XRSecretRef(fields ...string) (SecretRef, bool) {
	m, ok, _ := unstructured.NestedStringMap(r.XR.Object, append([]string{"spec"}, fields...)...)
	if !ok || m["name"] == "" || m["key"] == "" {
		return SecretRef{}, false
	}
	return SecretRef{Name: m["name"], Key: m["key"]}, true
}
