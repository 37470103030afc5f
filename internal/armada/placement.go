package armada

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
	"github.com/armadaproject/armada-crossplane/internal/structenc"
)

// Placement: where a composed object goes. The builders build plain
// Kubernetes objects; the renderer places each one. In this cluster it is
// composed as built (renderer.add). For a worker cluster, or for a
// namespaced XR's cluster-scoped objects (scope.go), it is wrapped in a
// provider-kubernetes Object for the config a clusterRef names
// (renderer.addTo, remoteObject), ready when the Object is.

// add composes an object in this cluster.
func (r *renderer) add(key string, o client.Object, ready bool) {
	r.addTo(nil, key, o, ready)
}

// addTo composes an object where to says: in this cluster if to is nil,
// else wrapped in a provider-kubernetes Object for the cluster to names
// (a worker cluster, or the cluster-scope config of a namespaced XR),
// ready when the Object is.
func (r *renderer) addTo(to *clusterRef, key string, o client.Object, ready bool) {
	r.addWith(to, key, o, remoteOptions{}, ready)
}

// addWith is addTo with what a wrapping Object adds around its manifest.
func (r *renderer) addWith(to *clusterRef, key string, o client.Object, opt remoteOptions, ready bool) {
	if to != nil {
		o, ready = r.in.remoteObject(key, *to, o, opt), r.opt.Observed.Ready[key]
	}
	r.out.Objects = append(r.out.Objects, Object{Key: key, Object: o, Ready: ready})
}

// exists is add's readiness for objects that are ready once they exist.
func (r *renderer) exists(key string) bool { return r.opt.Observed.Keys[key] }

// clusterRef is a worker cluster's provider-kubernetes config, or (local)
// the config that composes a namespaced XR's cluster-scoped objects in
// this cluster.
type clusterRef struct {
	Kind, Name string
	local      bool
}

// String is how status names the cluster.
func (c clusterRef) String() string { return c.Kind + "/" + c.Name }

// keyPrefix prefixes the keys of a cluster's shared objects.
func (c clusterRef) keyPrefix() string {
	if c.Kind == kindProviderConfig {
		return "cluster-pc-" + c.Name + "-"
	}
	return "cluster-" + c.Name + "-"
}

// remoteCluster is the worker cluster an executor runs in, or nil for this
// cluster.
func remoteCluster(e *v1alpha1.Executor) *clusterRef {
	if e == nil || e.Cluster == nil {
		return nil
	}
	kind := e.Cluster.ProviderConfigRef.Kind
	if kind == "" {
		kind = kindClusterPCRef
	}
	return &clusterRef{Kind: kind, Name: e.Cluster.ProviderConfigRef.Name}
}

// remoteClusters lists the executors' worker clusters, in spec order
// without repeats.
func (in *Install) remoteClusters() []clusterRef {
	var out []clusterRef
	seen := map[clusterRef]bool{}
	for i := range in.Spec.Executors {
		if c := remoteCluster(&in.Spec.Executors[i]); c != nil && !seen[*c] {
			seen[*c] = true
			out = append(out, *c)
		}
	}
	return out
}

// remoteOptions are what an Object adds around its manifest.
type remoteOptions struct {
	// Connection copies a key of the remote object into a Secret of this
	// name, in this cluster.
	Connection *remoteConnection
	// PatchFrom fills a manifest field from an object in this cluster.
	PatchFrom *remotePatch
	// Deletable composes the Object with every management policy, so
	// that dropping it deletes the remote object even under
	// spec.deletionPolicy Orphan.
	Deletable bool
}

type remoteConnection struct {
	Secret, FieldPath, Key string
}

type remotePatch struct {
	Kind, Name, FieldPath, ToFieldPath string
}

// workloadReadiness is a remote Deployment's readiness: every desired
// replica updated and available, as a local workload's.
const workloadReadiness = "has(object.status.observedGeneration) && object.status.observedGeneration >= object.metadata.generation && " +
	"has(object.status.availableReplicas) && has(object.status.updatedReplicas) && " +
	"object.status.availableReplicas >= object.spec.replicas && object.status.updatedReplicas >= object.spec.replicas"

// remoteObject wraps a manifest in a provider-kubernetes Object for a
// worker cluster. It follows spec.deletionPolicy: Orphan leaves the object
// in the worker cluster when the claim is deleted.
func (in *Install) remoteObject(key string, c clusterRef, o client.Object, opt remoteOptions) *unstructured.Unstructured {
	manifest := toJSONMap(o)
	delete(manifest, "status")
	structenc.DropNullTimestamps(manifest)
	spec := map[string]any{
		"forProvider":       map[string]any{"manifest": manifest},
		"providerConfigRef": map[string]any{"kind": c.Kind, "name": c.Name},
	}
	if o.GetObjectKind().GroupVersionKind().Kind == "Deployment" {
		spec["readiness"] = map[string]any{"policy": "DeriveFromCelQuery", "celQuery": workloadReadiness}
	}
	if cd := opt.Connection; cd != nil {
		spec["connectionDetails"] = []any{map[string]any{
			"apiVersion": "v1", "kind": kindSecret, "name": o.GetName(), "namespace": o.GetNamespace(),
			"fieldPath": cd.FieldPath, "toConnectionSecretKey": cd.Key,
		}}
		spec["writeConnectionSecretToRef"] = map[string]any{"name": cd.Secret}
	}
	if p := opt.PatchFrom; p != nil {
		spec["references"] = []any{map[string]any{
			"patchesFrom": map[string]any{"apiVersion": "v1", "kind": p.Kind, "name": p.Name, "namespace": in.Namespace, "fieldPath": p.FieldPath},
			"toFieldPath": p.ToFieldPath,
		}}
	}
	if c.local {
		// This cluster's cluster-scoped objects go with the Armada, as a
		// claim's do: they hold no data.
		return in.unstructuredObject(apiK8sObject, "Object", in.object(key), clusterScopeComponent, spec)
	}
	if opt.Deletable {
		return in.unstructuredObject(apiK8sObject, "Object", in.object(key), "executor", spec)
	}
	return in.unstructuredObject(apiK8sObject, "Object", in.object(key), "executor", in.protect(spec))
}

// InWorkerClusters wraps an object in a provider-kubernetes Object for
// each worker cluster the install's executors run in, keyed by cluster: a
// team's job namespaces, for example, must exist wherever its jobs can
// run. Adding a worker cluster adds its copies on the next reconcile.
// The Objects go in namespace: the Armada's for a claim's queue, the
// team's own for a namespaced one.
func (in *Install) InWorkerClusters(namespace, key string, o client.Object) []Object {
	clusters := in.remoteClusters()
	out := make([]Object, 0, len(clusters))
	for _, c := range clusters {
		k := c.keyPrefix() + key
		u := in.remoteObject(k, c, o, remoteOptions{})
		u.SetNamespace(namespace)
		out = append(out, Object{Key: k, Object: u})
	}
	return out
}

// addClusterScoped composes a cluster-scoped object: directly for a claim,
// through the cluster-scope config for a namespaced XR. An object for a
// worker cluster (to) goes there, as any other.
func (r *renderer) addClusterScoped(to *clusterRef, key string, o client.Object, ready bool) {
	if to == nil {
		to = r.in.clusterScope
	}
	r.addTo(to, key, o, ready)
}

// ObjectIn wraps an object in a provider-kubernetes Object named name in
// namespace, keyed key, for the config ref: how a namespaced XR composes
// an object outside its namespace. Ready is the wrapped object's own Ready
// condition when derive is set, else the Object's creation.
func (in *Install) ObjectIn(namespace, name, key string, ref v1alpha1.ProviderConfigRef, o client.Object, derive bool) Object {
	c := clusterRef{Kind: ref.Kind, Name: ref.Name, local: true}
	u := in.remoteObject(key, c, o, remoteOptions{})
	u.SetNamespace(namespace)
	u.SetName(name)
	if derive {
		spec, _ := u.Object["spec"].(map[string]any)
		spec["readiness"] = map[string]any{"policy": "DeriveFromObject"}
	}
	return Object{Key: key, Object: u}
}

// ClusterScope is a namespaced install's spec.clusterScope.providerConfigRef,
// or nil.
func (in *Install) ClusterScope() *v1alpha1.ProviderConfigRef {
	if in.clusterScope == nil {
		return nil
	}
	return &v1alpha1.ProviderConfigRef{Kind: in.clusterScope.Kind, Name: in.clusterScope.Name}
}
