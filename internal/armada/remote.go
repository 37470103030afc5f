package armada

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// Executors in other clusters. Everything a remote executor needs in its
// worker cluster (namespace, ServiceAccount, ClusterRole and binding,
// config, identity, Deployment, Service and Armada's PriorityClasses) is
// rendered by the same builders as for this cluster, and renderer.addWith wraps
// each object in a provider-kubernetes Object for that cluster's config.
//
// Credentials never cross the clusters through an Object's spec:
// provider-kubernetes resolves references[].patchesFrom into the Object in
// memory, and the managed reconciler then persists it (its finalizer and
// critical-annotation updates write the whole Object after Observe). So a
// remote executor's password is born in its worker cluster instead: a
// service-account token Secret that the worker's token controller fills,
// for an identity ServiceAccount with no permissions. The executor reads it
// there; the Object's connection details copy it back into a Secret in this
// cluster, from which the scheduler reads the same password.

const (
	// identityKey is the key of the connection Secret holding a remote
	// executor's password.
	identityKey = "password"
	// caDir is where remote executors find the executor API's CA.
	caDir = "/etc/armada/executor-api-ca"
	// caFile is the CA's file name under caDir.
	caFile = "ca.crt"
	// kindSecret is the Secret kind.
	kindSecret = "Secret"
	// defaultIngressGRPCPort is where an Ingress serves gRPC over TLS.
	defaultIngressGRPCPort = 443
)

// hasLocalExecutor says whether an executor runs in this cluster.
func (in *Install) hasLocalExecutor() bool {
	for i := range in.Spec.Executors {
		if remoteCluster(&in.Spec.Executors[i]) == nil {
			return true
		}
	}
	return false
}

// remoteIdentity is a remote executor's basic-auth identity at one
// rotation generation (identityrotation.go).
type remoteIdentity struct {
	// User is its basic-auth user in the scheduler's config; Base is
	// User's generation 0, which the executor's config file names (a
	// later generation's pods override it by env, so that its config
	// Secret, and the pods' config hash, do not change).
	User, Base string
	// Secret is both the token Secret in the worker cluster and the
	// connection Secret in this one.
	Secret string
	// Key is the composition resource name of its token Secret's Object.
	Key string
	// Retiring is set on an older generation kept only until the
	// executor runs on the newer one.
	Retiring bool
}

// identityOf is the identity a remote executor authenticates as, or nil
// for a local one.
func (in *Install) identityOf(e *v1alpha1.Executor) *remoteIdentity {
	if remoteCluster(e) == nil {
		return nil
	}
	if id, ok := in.activeIdentity[e.ClusterID]; ok {
		return &id
	}
	return in.identityAt(e, in.identityGeneration(e))
}

// remoteIdentities are the remote executors' identities the scheduler
// accepts, in spec order (older generations first): those whose password
// has arrived here. Until then the scheduler has no such user at all,
// rather than one with an empty password; when it arrives the scheduler's
// config changes and it rolls.
func (in *Install) remoteIdentities() []remoteIdentity {
	var out []remoteIdentity
	for i := range in.Spec.Executors {
		for _, id := range in.identitiesOf(&in.Spec.Executors[i]) {
			if in.established[id.User] {
				out = append(out, id)
			}
		}
	}
	return out
}

// identityKey is the composition resource name of an executor's identity
// Secret.
func identityResource(instance string) string { return instance + "-identity" }

// executorAPIURL is where remote executors dial the scheduler.
func (in *Install) executorAPIURL() string {
	if a := in.Spec.ExecutorAPI; a != nil && a.URL != "" {
		return a.URL
	}
	if ing := in.Spec.Ingress; ing != nil && ing.ExecutorAPIHost != "" {
		return fmt.Sprintf("%s:%d", ing.ExecutorAPIHost, defaultIngressGRPCPort)
	}
	return ""
}

// remoteConnection is a remote executor's executorApiConnection: the
// exposed executor API, over TLS unless explicitly insecure, as its own
// identity.
func (in *Install) remoteConnection(id *remoteIdentity) map[string]any {
	c := in.connection(in.executorAPIURL(), id.Base)
	c["forceNoTls"] = in.Spec.ExecutorAPI != nil && in.Spec.ExecutorAPI.Insecure
	return c
}

// caSecret names the executor API's CA Secret in worker clusters.
func (in *Install) caSecret() string { return in.object("executor-api-ca") }

// trustsCA says whether remote executors mount a private CA.
func (in *Install) trustsCA() bool {
	return in.Spec.ExecutorAPI != nil && in.Spec.ExecutorAPI.CASecretRef != nil
}

// remoteExecutor composes a remote executor's identity in its worker
// cluster (to) and returns it, or nil for a local instance.
func (r *renderer) remoteExecutor(inst *instance, to *clusterRef) *remoteIdentity {
	in, name := r.in, inst.Name
	id := in.identityOf(inst.Executor)
	if id == nil {
		return nil
	}
	for _, g := range in.identitiesOf(inst.Executor) {
		sa, token := in.identityObjects(&g, name)
		// A retiring generation's Objects delete what they compose in
		// the worker when dropped, whatever spec.deletionPolicy: that
		// revokes its token.
		r.addWith(to, g.Key+"-serviceaccount", sa, remoteOptions{Deletable: g.Retiring}, false)
		if !r.tokenAfterServiceAccount(g.Key) {
			continue
		}
		conn := &remoteConnection{Secret: g.Secret, FieldPath: "data.token", Key: identityKey}
		r.addWith(to, g.Key, token, remoteOptions{Connection: conn, Deletable: g.Retiring}, false)
	}
	return id
}

// tokenAfterServiceAccount says whether an identity's token Secret (its
// composition resource name key) is composed: once it was, or once the
// Object of its ServiceAccount has created it in the worker (recorded in
// its annotations before its status: a status write that conflicts waits
// for provider-kubernetes' backoff, up to a minute) or is Ready. The worker's token controller deletes a token Secret whose
// ServiceAccount does not exist yet, and provider-kubernetes, not finding
// the Secret within 30 s of creating it, waits with a growing backoff
// (about a minute) before creating it again: composed together, the
// Secret that won the race held the identity back that long.
func (r *renderer) tokenAfterServiceAccount(key string) bool {
	sa := key + "-serviceaccount"
	return r.exists(key) || r.opt.Observed.Created[sa] || r.opt.Observed.Ready[sa]
}

// remoteExtras are the pod settings only a remote executor (id set) has:
// its CA and SSL_CERT_FILE pointing at it.
func (in *Install) remoteExtras(id *remoteIdentity) ([]corev1.EnvVar, []corev1.Volume, []corev1.VolumeMount) {
	if id == nil || !in.trustsCA() {
		return nil, nil, nil
	}
	return []corev1.EnvVar{{Name: "SSL_CERT_FILE", Value: caDir + "/" + caFile}},
		[]corev1.Volume{{Name: "executor-api-ca", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: in.caSecret(), Items: []corev1.KeyToPath{{Key: caFile, Path: caFile}},
		}}}},
		[]corev1.VolumeMount{{Name: "executor-api-ca", MountPath: caDir, ReadOnly: true}}
}

// identityObjects are a remote executor's identity in its worker cluster:
// a ServiceAccount bound to nothing, and a token Secret for it that the
// worker's token controller fills.
func (in *Install) identityObjects(id *remoteIdentity, component string) (*corev1.ServiceAccount, *corev1.Secret) {
	sa := &corev1.ServiceAccount{
		TypeMeta:                     metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta:                   in.meta(id.Secret, component),
		AutomountServiceAccountToken: ptr.To(false),
	}
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: kindSecret},
		ObjectMeta: in.meta(id.Secret, component),
		Type:       corev1.SecretTypeServiceAccountToken,
	}
	secret.Annotations = map[string]string{corev1.ServiceAccountNameKey: id.Secret}
	return sa, secret
}

// namespaceObject is the Armada's namespace in a worker cluster.
func (in *Install) namespaceObject() *corev1.Namespace {
	return &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: in.Namespace, Labels: in.labels("namespace")},
	}
}

// remoteClusterObjects are what every worker cluster needs once: the
// namespace, the executor's two ClusterRoles, Armada's PriorityClasses and,
// with a private CA, the CA (public, so copied through the Object).
func (r *renderer) remoteClusterObjects() {
	in := r.in
	for _, c := range in.remoteClusters() {
		to := &c
		p := c.keyPrefix()
		r.addTo(to, p+"namespace", in.namespaceObject(), false)
		for _, pc := range in.Spec.Scheduling.PriorityClasses {
			r.addTo(to, p+"priorityclass-"+pc.Name, in.priorityClass(pc.Name, pc.Priority, pc.Preemptible), false)
		}
		for i := range components {
			comp := &components[i]
			if !comp.PerExecutor {
				continue
			}
			if len(comp.ClusterRules) > 0 {
				r.addTo(to, p+comp.Name+"-clusterrole", in.clusterRole(comp.Name, comp.ClusterRules), false)
			}
			if len(comp.JobRules) > 0 {
				r.addTo(to, p+comp.Name+jobsSuffix+"-clusterrole", in.clusterRole(comp.Name+jobsSuffix, comp.JobRules), false)
			}
		}
		if in.trustsCA() {
			ref := in.Spec.ExecutorAPI.CASecretRef
			ca := &corev1.Secret{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: kindSecret},
				ObjectMeta: in.meta(in.caSecret(), "executor"),
			}
			r.addWith(to, p+"executor-api-ca", ca, remoteOptions{PatchFrom: &remotePatch{
				Kind: kindSecret, Name: ref.Name, FieldPath: "data[" + ref.Key + "]",
				// provider-kubernetes resolves toFieldPath inside the
				// manifest (it prefixes spec.forProvider.manifest).
				ToFieldPath: "data[" + caFile + "]",
			}}, false)
		}
	}
}

// remoteStatus reports an executor's cluster, and why a remote one is not
// ready: its Objects' sync errors (an unreachable cluster) first. A
// workload Object that cannot sync is not ready even if it was: its
// observed status is the last one seen before the cluster went away.
func (r *renderer) remoteStatus(name string, e *v1alpha1.Executor, st v1alpha1.ComponentStatus) v1alpha1.ExecutorStatus {
	s := v1alpha1.ExecutorStatus{ClusterID: e.ClusterID, Cluster: "local", Ready: st.Ready, Reason: st.Reason}
	c := remoteCluster(e)
	if c == nil {
		return s
	}
	s.Cluster = c.String()
	if msg, ok := r.opt.Observed.Unsynced[name+keyWorkloadSuffix]; ok {
		s.Ready = false
		s.Reason = "Cannot reach worker cluster " + c.String() + ": " + firstLine(msg)
	}
	return s
}

// firstLine is a message's first line.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
