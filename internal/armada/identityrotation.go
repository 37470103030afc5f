package armada

import (
	"slices"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// Rotation of a remote executor's identity (spec.rotation.passwords
// [internal-executor-<clusterId>]). Its password is a service-account
// token born in the worker cluster (remote.go), so a new generation is a
// new identity there: a ServiceAccount and token Secret named
// <name>-executor-<clusterId>-identity-r<generation>, whose token becomes
// the password of the user internal-executor-<clusterId>-r<generation>.
// The old generation stays composed, and the scheduler accepts both,
// until the executor runs on the new one:
//
//  1. The new identity is composed beside the old one, whose Objects now
//     delete what they compose when dropped (even under deletionPolicy
//     Orphan). The executor keeps the old identity.
//  2. Once the new token has arrived here (its Object ready), the
//     scheduler accepts both users and the executor switches to the new
//     one: both roll.
//  3. Once the executor's Deployment is ready with pods on the new
//     identity, and the old Objects are observed deletable, the old
//     generation is dropped: provider-kubernetes deletes its token Secret
//     and ServiceAccount in the worker, which revokes the token, and the
//     scheduler rolls without the old user.

// identityGeneration is the desired generation of a remote executor's
// identity.
func (in *Install) identityGeneration(e *v1alpha1.Executor) int32 {
	return in.passwordGeneration(userExecutor + "-" + e.ClusterID)
}

// generationSuffix names generation g's objects: none for 0.
func generationSuffix(g int32) string {
	if g == 0 {
		return ""
	}
	return "-r" + strconv.Itoa(int(g))
}

// identityAt is a remote executor's identity at generation g.
func (in *Install) identityAt(e *v1alpha1.Executor, g int32) *remoteIdentity {
	name := "executor-" + e.ClusterID
	sfx := generationSuffix(g)
	base := userExecutor + "-" + e.ClusterID
	return &remoteIdentity{User: base + sfx, Base: base, Secret: in.object(name+"-identity") + sfx, Key: identityResource(name) + sfx}
}

// identitiesOf are the identities composed for a remote executor, oldest
// first: the desired generation and the older ones not retired yet.
func (in *Install) identitiesOf(e *v1alpha1.Executor) []remoteIdentity {
	if remoteCluster(e) == nil {
		return nil
	}
	if ids, ok := in.composedIdentities[e.ClusterID]; ok {
		return ids
	}
	return []remoteIdentity{*in.identityAt(e, in.identityGeneration(e))}
}

// observedIdentityGenerations are the generations of an executor's
// identity Objects observed, ascending.
func observedIdentityGenerations(o Observed, instance string) []int32 {
	base := identityResource(instance)
	var out []int32
	for k := range o.Keys {
		if k == base {
			out = append(out, 0)
			continue
		}
		if rest, ok := strings.CutPrefix(k, base+"-r"); ok {
			if n, err := strconv.ParseInt(rest, 10, 32); err == nil && n > 0 {
				out = append(out, int32(n))
			}
		}
	}
	slices.Sort(out)
	return out
}

// checkIdentityGenerations refuses a generation below one observed.
func checkIdentityGenerations(in *Install, o Observed) error {
	for i := range in.Spec.Executors {
		e := &in.Spec.Executors[i]
		if remoteCluster(e) == nil {
			continue
		}
		g := in.identityGeneration(e)
		if gens := observedIdentityGenerations(o, "executor-"+e.ClusterID); len(gens) > 0 && gens[len(gens)-1] > g {
			return errors.Errorf("spec.rotation.passwords.%s-%s: Invalid value: %d: the executor's identity is at generation %d; generations only go up",
				userExecutor, e.ClusterID, g, gens[len(gens)-1])
		}
	}
	return nil
}

// withEstablished is a copy of in that records which remote identities
// have their password here (the identity Object is ready and synced, so
// provider-kubernetes has read the worker's token and published it to
// the connection Secret), which generations each executor composes and
// which it authenticates as. in itself is left as it is.
func (in *Install) withEstablished(o Observed) *Install {
	cp := *in
	in = &cp
	in.established = map[string]bool{}
	in.composedIdentities = map[string][]remoteIdentity{}
	in.activeIdentity = map[string]remoteIdentity{}
	for i := range in.Spec.Executors {
		e := &in.Spec.Executors[i]
		if remoteCluster(e) == nil {
			continue
		}
		name := "executor-" + e.ClusterID
		want := *in.identityAt(e, in.identityGeneration(e))
		var ids []remoteIdentity
		for _, g := range observedIdentityGenerations(o, name) {
			if id := in.identityAt(e, g); id.Key != want.Key && g < in.identityGeneration(e) {
				id.Retiring = true
				ids = append(ids, *id)
			}
		}
		ids = append(ids, want)
		for _, id := range ids {
			if _, unsynced := o.Unsynced[id.Key]; o.Ready[id.Key] && !unsynced {
				in.established[id.User] = true
			}
		}
		// The executor moves to the newest identity whose password has
		// arrived; until one has, it keeps the desired one (a new
		// executor) or the newest older one.
		active := want
		if !in.established[want.User] {
			for _, id := range ids {
				if in.established[id.User] {
					active = id
				}
			}
		}
		in.activeIdentity[e.ClusterID] = active
		if active.Key == want.Key && o.Ready[name+keyWorkloadSuffix] && slices.Contains(o.RemoteSecrets[name], want.Secret) {
			// The executor runs on the new identity: the older ones go,
			// once their Objects are observed deletable.
			ids = slices.DeleteFunc(ids, func(id remoteIdentity) bool {
				return id.Retiring && o.Deletable[id.Key] && o.Deletable[id.Key+"-serviceaccount"]
			})
		}
		in.composedIdentities[e.ClusterID] = ids
	}
	return in
}
