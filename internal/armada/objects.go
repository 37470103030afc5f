package armada

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/structenc"
)

// configSecret holds a component's rendered Armada config. It is a Secret,
// not a ConfigMap, because a user's free-form config may hold credentials
// (for example an OIDC client secret); generated passwords never appear in
// it. It returns the Secret and a hash of its content.
func (in *Install) configSecret(scratch *[]byte, name, component string, cfg map[string]any) (*corev1.Secret, string, error) {
	e, err := encodeConfig(scratch, cfg)
	if err != nil {
		return nil, "", errors.Wrapf(err, "cannot encode %s config", component)
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: kindSecret},
		ObjectMeta: in.meta(name, component),
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{configKey: e.yaml},
	}, e.hash, nil
}

// configEncoding is a config's YAML and its hash.
type configEncoding struct {
	yaml []byte
	hash string
}

// encodeConfig writes a config as YAML. structenc writes what
// sigs.k8s.io/yaml would, in one pass; keys are sorted, so the output is
// deterministic. It writes through scratch, a buffer one render reuses
// for all its configs, and keeps a copy of just the config's size.
func encodeConfig(scratch *[]byte, cfg map[string]any) (configEncoding, error) {
	if *scratch == nil {
		// The production example's largest config is under 3 kB.
		*scratch = make([]byte, 0, 4096)
	}
	b, err := structenc.AppendYAML((*scratch)[:0], cfg)
	*scratch = b
	if err != nil {
		return configEncoding{}, err
	}
	b = bytes.Clone(b)
	return configEncoding{yaml: b, hash: configHash(b)}, nil
}

// configHash is the hash of a config's YAML that pod templates carry.
func configHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// credentialsSecret holds every basic-auth user's password, keyed by user.
func (in *Install) credentials(passwords map[string]string) *corev1.Secret {
	data := map[string][]byte{}
	for _, u := range slices.Sorted(maps.Keys(passwords)) {
		data[u] = []byte(passwords[u])
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: kindSecret},
		ObjectMeta: in.meta(in.credentialsSecret(), "credentials"),
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
}

// migrationJob runs a schema migration once for one Armada version,
// database config and pod spec, and returns it with its composition
// resource name. A Job's template is immutable, so the name carries the
// version and a hash of the config and the pod spec: an upgrade, a move to
// another database or a change of image registry, resources or security
// context creates a new Job that migrates again rather than failing to
// edit the old one.
func (in *Install) migrationJob(m migration, version, configSecret, configHash string) (*batchv1.Job, string, error) {
	name := "migrate-" + m.Name
	c := &component{Name: "migrate", Database: m.Name}
	tpl := in.podTemplate(podOptions{
		Component:    c,
		Name:         name,
		Image:        in.image(m.Image, version, nil),
		Args:         m.Args,
		Resources:    migrationResources(),
		ConfigSecret: configSecret,
		ConfigHash:   configHash,
		Version:      version,
	})
	hash, err := jobHash(configHash, &tpl.Spec)
	if err != nil {
		return nil, "", err
	}
	key := "migrate-" + m.Name + "-" + versionSuffix(version) + "-" + hash[:6]
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: in.meta(in.object(key), name),
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](6),
			Template:     tpl,
		},
	}, key, nil
}

// jobHash is the hash a Job's name carries: of what the Job reads (its
// config's hash, or its environment) and of its pod spec, which a Job
// cannot change once created. Labels and annotations are left out, so a
// change to them alone does not run the Job again.
func jobHash(inputs string, spec *corev1.PodSpec) (string, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return "", errors.Wrap(err, "cannot encode a Job's pod spec")
	}
	// configHash of inputs, a newline and b, without joining them first.
	h := sha256.New()
	h.Write([]byte(inputs + "\n"))
	h.Write(b)
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:8]), nil
}

// priorityClass is a Kubernetes PriorityClass matching an Armada one.
func (in *Install) priorityClass(name string, value int32, preemptible bool) *schedulingv1.PriorityClass {
	policy := corev1.PreemptNever
	if preemptible {
		policy = corev1.PreemptLowerPriority
	}
	return &schedulingv1.PriorityClass{
		TypeMeta:         metav1.TypeMeta{APIVersion: "scheduling.k8s.io/v1", Kind: "PriorityClass"},
		ObjectMeta:       metav1.ObjectMeta{Name: name, Labels: in.labels("priorityclass"), Annotations: in.owner.annotations()},
		Value:            value,
		PreemptionPolicy: &policy,
		Description:      "Armada priority class managed by function-armada for " + in.Namespace + "/" + in.Name,
	}
}

// clusterRole grants a component's cluster-wide rules in a worker cluster,
// where provider-kubernetes creates it for this install (see remote.go).
func (in *Install) clusterRole(component string, rules []rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiVersionRBAC, Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: in.clusterObject(component), Labels: in.labels(component)},
		Rules:      rules,
	}
}

// clusterRoleBinding binds the ClusterRole role to an instance's
// ServiceAccount.
func (in *Install) clusterRoleBinding(role, instance string) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiVersionRBAC, Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: in.clusterObject(instance), Labels: in.labels(instance)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: in.object(instance), Namespace: in.Namespace}},
	}
}

// leaseRole lets a leader-elected component hold its lease, in its own
// namespace only.
func (in *Install) leaseRole(name string) (*rbacv1.Role, *rbacv1.RoleBinding) {
	role := &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiVersionRBAC, Kind: "Role"},
		ObjectMeta: in.meta(in.object(name+"-leader"), name),
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"coordination.k8s.io"},
			Resources: []string{"leases"},
			Verbs:     []string{"get", "list", "watch", "create", "update", "patch"},
		}},
	}
	binding := &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiVersionRBAC, Kind: "RoleBinding"},
		ObjectMeta: in.meta(in.object(name+"-leader"), name),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: in.object(name), Namespace: in.Namespace}},
	}
	return role, binding
}

// ingress routes one host to a component's port. ingress-nginx is told to
// speak gRPC to a gRPC backend, and TLS to a backend that serves it.
func (in *Install) ingress(suffix, host, component, port string, grpc bool) *networkingv1.Ingress {
	spec := in.Spec.Ingress
	ann := maps.Clone(spec.Annotations)
	if p := in.backendProtocol(component, grpc); p != "" {
		if ann == nil {
			ann = map[string]string{}
		}
		ann["nginx.ingress.kubernetes.io/backend-protocol"] = p
	}
	ing := &networkingv1.Ingress{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "Ingress"},
		ObjectMeta: in.meta(in.object(suffix), component),
		Spec: networkingv1.IngressSpec{
			Rules: []networkingv1.IngressRule{{
				Host: host,
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{{
						Path:     "/",
						PathType: ptr.To(networkingv1.PathTypePrefix),
						Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
							Name: in.object(component),
							Port: networkingv1.ServiceBackendPort{Name: port},
						}},
					}},
				}},
			}},
		},
	}
	ing.Annotations = ann
	if spec.ClassName != "" {
		ing.Spec.IngressClassName = ptr.To(spec.ClassName)
	}
	if spec.TLSSecretName != "" {
		ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{host}, SecretName: spec.TLSSecretName}}
	}
	return ing
}

// backendProtocol is ingress-nginx's backend-protocol for a component's
// gRPC or HTTP port, or empty for plain HTTP.
func (in *Install) backendProtocol(component string, grpc bool) string {
	tls := false
	for i := range components {
		if c := &components[i]; c.Name == component {
			tls = in.servesTLS(c) && (grpc || c.TLSHTTP)
		}
	}
	switch {
	case grpc && tls:
		return "GRPCS"
	case grpc:
		return "GRPC"
	case tls:
		return "HTTPS"
	}
	return ""
}
