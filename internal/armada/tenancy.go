package armada

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane/crossplane-runtime/v2/pkg/xcrd"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// What a tenant's claim may reach. A claim composes into its own namespace
// only, resolves Secret references there only, never names a Secret the
// function composes as one of its inputs, and never adopts an object that
// exists without its ownership mark (see Owner). docs/guides/tenancy.md
// lists every refusal.

// AnnotationOwner is the ownership mark: the annotation the function puts
// on what it composes that could otherwise be adopted by name (cluster-wide
// PriorityClasses, a team queue's namespaces and Queue), naming the claim,
// or the XR when there is no claim, that composed it.
const AnnotationOwner = "armadaproject.io/owner"

// Owner is who composes an object: the claim a tenant wrote, or the XR
// itself when it has no claim.
type Owner struct {
	// Mark is the value of AnnotationOwner on what it composes, e.g.
	// "ArmadaClaim team-a/armada".
	Mark string
	// Composite is the name of a cluster-scoped XR, which Crossplane's
	// crossplane.io/composite label names on every object it composed
	// directly (before marks existed); empty for a namespaced XR, whose
	// name is not unique in the cluster.
	Composite string
}

// Kinds are the kinds of one API: its cluster-scoped XR, that XR's claim,
// and its namespaced XR.
type Kinds struct {
	Cluster, Claim, Namespaced string
}

// ArmadaKinds are the kinds of an Armada.
var ArmadaKinds = Kinds{Cluster: "XArmada", Claim: "ArmadaClaim", Namespaced: "Armada"}

// NewOwner is the owner of what an XR of kinds composes: namespace is a
// namespaced XR's own namespace, labels a cluster-scoped XR's, naming its
// claim if it has one.
func NewOwner(kinds Kinds, name, namespace string, labels map[string]string) Owner {
	switch {
	case namespace != "":
		return Owner{Mark: kinds.Namespaced + " " + namespace + "/" + name}
	case labels[xcrd.LabelKeyClaimNamespace] != "":
		return Owner{Mark: kinds.Claim + " " + labels[xcrd.LabelKeyClaimNamespace] + "/" + labels[xcrd.LabelKeyClaimName], Composite: name}
	}
	return Owner{Mark: kinds.Cluster + " " + name, Composite: name}
}

// Owns reports whether o composed an existing object: it carries o's mark,
// or Crossplane's label naming o's XR. Otherwise holder says who did, or is
// empty when nothing says.
func (o Owner) Owns(obj metav1.Object) (owned bool, holder string) {
	mark := obj.GetAnnotations()[AnnotationOwner]
	composite := obj.GetLabels()[xcrd.LabelKeyNamePrefixForComposed]
	switch {
	case mark != "" && mark == o.Mark:
		return true, ""
	case mark == "" && composite != "" && composite == o.Composite:
		return true, ""
	case mark != "":
		return false, mark
	case composite != "":
		return false, "composite resource " + composite
	}
	return false, ""
}

// Stamp puts o's ownership mark on an object the function composes.
func (o Owner) Stamp(obj metav1.Object) {
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[AnnotationOwner] = o.Mark
	obj.SetAnnotations(a)
}

// annotations are the annotations carrying o's mark.
func (o Owner) annotations() map[string]string { return map[string]string{AnnotationOwner: o.Mark} }

// Owner is who composes the install.
func (in *Install) Owner() Owner { return in.owner }

// ownerOf is the owner of the install an XR describes.
func ownerOf(xr XR) Owner {
	return NewOwner(ArmadaKinds, xr.Name, xr.Namespace, xr.Labels)
}

// ownNamespace refuses a claim's spec.namespace naming another namespace:
// a claim composes into its own namespace, where its Secret references
// then resolve too. Only an XR created without a claim, by whoever may
// create cluster-scoped XArmadas, chooses its namespace.
func ownNamespace(xr XR) field.ErrorList {
	ns := xr.Labels[xcrd.LabelKeyClaimNamespace]
	if ns == "" || xr.Spec.Namespace == "" || xr.Spec.Namespace == ns {
		return nil
	}
	return field.ErrorList{field.Forbidden(field.NewPath("spec", "namespace"), fmt.Sprintf(
		"a claim composes only into its own namespace (%s), not %s; remove spec.namespace, or apply the claim in namespace %s if you may",
		ns, xr.Spec.Namespace, xr.Spec.Namespace))}
}

// composedSecrets are the Secrets the install composes, or that what it
// composes writes, in its namespace, by name, each with what it holds.
func (in *Install) composedSecrets() map[string]string {
	out := map[string]string{
		in.credentialsSecret():                 "the generated passwords",
		in.tlsSecret():                         "the private CA's key and the TLS keys",
		in.object("provider-armada"):           "provider-armada's password",
		in.object("postgres-app"):              "the in-cluster PostgreSQL's password",
		in.cnpgClusterName() + "-ca":           "the in-cluster PostgreSQL's CA key",
		in.cnpgClusterName() + "-server":       "the in-cluster PostgreSQL's TLS key",
		in.cnpgClusterName() + "-replication":  "the in-cluster PostgreSQL's replication key",
		in.cnpgClusterName() + "-superuser":    "the in-cluster PostgreSQL's superuser password",
		in.pulsarKeySecret():                   "the in-cluster Pulsar's token signing key",
		in.pulsarTokenSecret(pulsarRoleArmada): "the in-cluster Pulsar's token for Armada",
		in.pulsarTokenSecret(pulsarRoleBroker): "the in-cluster Pulsar's brokers' token",
	}
	for _, m := range migrations {
		out[in.object("migrate-"+m.Name+"-config")] = "the " + m.Name + " migration's config"
	}
	for _, p := range pruners {
		out[in.object(pruneName(p.Database)+"-config")] = "the " + p.Database + " pruner's config"
	}
	for _, inst := range instances(in) {
		out[in.object(inst.Name+"-config")] = "the " + inst.Name + " config"
		out[in.certificateSecret(inst.Name)] = "the " + inst.Name + " TLS key"
		if id := in.identityOf(inst.Executor); id != nil {
			out[id.Secret] = "the " + inst.Name + " password"
		}
	}
	return out
}

// composedSecret reports what a Secret the install composes holds: one of
// composed, or a remote executor's identity Secret at any generation (an
// older one is still composed while it retires; a later one will be).
func (in *Install) composedSecret(composed map[string]string, name string) (string, bool) {
	if what, ok := composed[name]; ok {
		return what, true
	}
	for _, inst := range instances(in) {
		if remoteCluster(inst.Executor) == nil {
			continue
		}
		base := in.identityAt(inst.Executor, 0).Secret
		rest, generation := strings.CutPrefix(name, base+"-r")
		if name == base || generation && rest != "" && strings.Trim(rest, "0123456789") == "" {
			return "the " + inst.Name + " password (another generation)", true
		}
	}
	return "", false
}

// secretInputs are the spec's fields that name a Secret the install reads,
// as the user wrote them, by field path.
func secretInputs(s *v1alpha1.ArmadaSpec) map[*field.Path]string {
	p := field.NewPath("spec")
	out := map[*field.Path]string{}
	key := func(fp *field.Path, r *v1alpha1.SecretKeyRef) {
		if r != nil {
			out[fp.Child("name")] = r.Name
		}
	}
	key(p.Child("postgres", "passwordSecretRef"), s.Postgres.PasswordSecretRef)
	if r := s.Postgres.AdminSecretRef; r != nil {
		out[p.Child("postgres", "adminSecretRef", "name")] = r.Name
	}
	if b := s.Postgres.Backup; b != nil {
		objectStoreSecrets(p.Child("postgres", "backup", "objectStore"), b.ObjectStore, out)
	}
	if r := s.Postgres.Restore; r != nil {
		objectStoreSecrets(p.Child("postgres", "restore", "objectStore"), &r.ObjectStore, out)
	}
	key(p.Child("redis", "passwordSecretRef"), s.Redis.PasswordSecretRef)
	key(p.Child("pulsar", "tokenSecretRef"), s.Pulsar.TokenSecretRef)
	key(p.Child("pulsar", "caSecretRef"), s.Pulsar.CASecretRef)
	if o := s.Auth.OIDC; o != nil {
		key(p.Child("auth", "oidc", "caSecretRef"), o.CASecretRef)
	}
	if a := s.ExecutorAPI; a != nil {
		key(p.Child("executorApi", "caSecretRef"), a.CASecretRef)
	}
	if ing := s.Ingress; ing != nil && ing.TLSSecretName != "" {
		out[p.Child("ingress", "tlsSecretName")] = ing.TLSSecretName
	}
	for i, r := range s.ImagePullSecrets {
		out[p.Child("imagePullSecrets").Index(i).Child("name")] = r.Name
	}
	return out
}

// checkSecretInputs refuses a Secret input (of user, the spec as written)
// that names a Secret the install composes: the function would overwrite
// it, or hand what it holds to whatever reads the input (an Ingress
// controller serving the CA's key, say).
func (in *Install) checkSecretInputs(user *v1alpha1.ArmadaSpec) field.ErrorList {
	composed := in.composedSecrets()
	inputs := secretInputs(user)
	paths := slices.SortedFunc(maps.Keys(inputs), func(a, b *field.Path) int {
		switch {
		case a.String() < b.String():
			return -1
		case a.String() > b.String():
			return 1
		}
		return 0
	})
	var errs field.ErrorList
	for _, p := range paths {
		name := inputs[p]
		if what, ok := in.composedSecret(composed, name); ok {
			errs = append(errs, field.Invalid(p, name, fmt.Sprintf(
				"names the Secret the function composes with %s; name a Secret of your own in namespace %s", what, in.Namespace)))
		}
	}
	return errs
}

// CheckPriorityClasses refuses priority class names whose PriorityClass
// exists and is not this install's: another Armada's, or one the platform
// (or anyone) created, which Crossplane would otherwise adopt, change and
// delete with the claim. existing maps a name to the PriorityClass found;
// composed names what the XR already composes (its resource references and
// observed resources), which stays its own.
func (in *Install) CheckPriorityClasses(existing map[string]metav1.Object, composed []string) field.ErrorList {
	var errs field.ErrorList
	for i, pc := range in.Spec.Scheduling.PriorityClasses {
		obj, ok := existing[pc.Name]
		if !ok || slices.Contains(composed, pc.Name) {
			continue
		}
		owned, holder := in.owner.Owns(obj)
		if owned {
			continue
		}
		p := field.NewPath("spec", "scheduling", "priorityClasses").Index(i).Child("name")
		if holder != "" {
			errs = append(errs, field.Invalid(p, pc.Name, fmt.Sprintf("PriorityClass %s already belongs to %s; PriorityClasses are cluster-wide, "+
				"so choose names no other Armada in this cluster uses", pc.Name, holder)))
			continue
		}
		errs = append(errs, field.Invalid(p, pc.Name, fmt.Sprintf("PriorityClass %s already exists and was not created by this Armada; "+
			"it is not adopted: choose another name, or leave spec.scheduling.priorityClasses unset for names of this Armada's own", pc.Name)))
	}
	return errs
}
