package armada

import (
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// Install is a defaulted, validated XArmada spec with the names every
// builder derives objects from.
type Install struct {
	// Name prefixes every composed object: the claim's name, or the XR's.
	Name string
	// Namespace holds every namespaced composed object.
	Namespace string
	// Spec is the defaulted spec.
	Spec v1alpha1.ArmadaSpec
	// established are the remote executor identities whose password has
	// arrived in this cluster, by user: set on Render's own copy from
	// observations (withEstablished).
	established map[string]bool
	// composedIdentities are the identities each remote executor composes
	// and activeIdentity the one it authenticates as, by clusterId (see
	// identityrotation.go); set with established.
	composedIdentities map[string][]remoteIdentity
	activeIdentity     map[string]remoteIdentity
	// isNamespaced is set for a namespaced XR, which composes into its own
	// namespace; clusterScope is then how its cluster-scoped objects are
	// composed (see scope.go).
	isNamespaced bool
	clusterScope *clusterRef
	// owner marks what the install composes that could be adopted by name.
	owner Owner
	// legacySQLProviderConfig keeps the provider-sql ProviderConfig's
	// unhashed name for an Armada that already composes it (see
	// sqlProviderConfigName).
	legacySQLProviderConfig bool
}

// Internal basic-auth users the components authenticate to each other
// with. Their names contain a hyphen, which user names may not, so they
// never collide.
const (
	userScheduler = "internal-scheduler" // scheduler -> server (queues)
	userServer    = "internal-server"    // server -> scheduler (reports)
	userExecutor  = "internal-executor"  // executor -> scheduler (ExecutorApi)

	groupExecutors = "armada-executors"
	groupInternal  = "armada-internal"
)

// object names every composed object's name from the install name.
func (in *Install) object(suffix string) string { return in.Name + "-" + suffix }

// clusterObject names a cluster-scoped object. It includes the namespace so
// that two Armadas with the same name in different namespaces never collide.
func (in *Install) clusterObject(suffix string) string {
	return "armada:" + in.Namespace + ":" + in.Name + "-" + suffix
}

// credentialsSecret names the Secret holding generated passwords.
func (in *Install) credentialsSecret() string { return in.object("credentials") }

// serviceHost is a component's in-cluster DNS name.
func (in *Install) serviceHost(component string) string {
	return fmt.Sprintf("%s.%s.svc", in.object(component), in.Namespace)
}

// grpcAddress is a component's in-cluster gRPC address.
func (in *Install) grpcAddress(component string) string {
	return fmt.Sprintf("%s:%d", in.serviceHost(component), portGRPC)
}

// Endpoints are where users reach Armada: through the Ingress when there is
// one, otherwise the in-cluster Services.
func (in *Install) Endpoints() v1alpha1.Endpoints {
	if ing := in.Spec.Ingress; ing != nil {
		scheme, grpcPort := "http", 80
		if ing.TLSSecretName != "" {
			scheme, grpcPort = "https", 443
		}
		return v1alpha1.Endpoints{
			GRPC:    fmt.Sprintf("%s:%d", ing.GRPCHost, grpcPort),
			REST:    fmt.Sprintf("%s://%s", scheme, ing.RESTHost),
			Lookout: fmt.Sprintf("%s://%s", scheme, ing.LookoutHost),
		}
	}
	return v1alpha1.Endpoints{
		GRPC:    in.grpcAddress("server"),
		REST:    in.serviceURL("server"),
		Lookout: in.serviceURL("lookout"),
	}
}

// serviceURL is the in-cluster URL of the HTTP port of the server,
// Lookout or binoculars, which serve it with TLS when spec.tls is on
// (their TLSHTTP rows in components.go; the table is not read here, as
// the table's configs read Endpoints).
func (in *Install) serviceURL(component string) string {
	u := httpURL(in.serviceHost(component), portHTTP)
	if in.tlsOn() {
		u = "https" + strings.TrimPrefix(u, "http")
	}
	return u
}

// httpURL is a plain-HTTP URL of a host and port.
func httpURL(host string, port int) string {
	return "http://" + net.JoinHostPort(host, strconv.Itoa(port))
}

// image is the image reference of an Armada image at a version, honouring
// spec.imageRegistry and a component's image override.
func (in *Install) image(name, version string, override *v1alpha1.Image) string {
	repo := defaultImageOrg + "/" + name
	if in.Spec.ImageRegistry != "" {
		repo = strings.TrimSuffix(in.Spec.ImageRegistry, "/") + "/" + repo
	}
	tag := version
	if override != nil {
		if override.Repository != "" {
			repo = override.Repository
		}
		if override.Tag != "" {
			tag = override.Tag
		}
	}
	return repo + ":" + tag
}

// internalUsers are the users components authenticate to each other as.
var internalUsers = []v1alpha1.BasicUser{
	{Name: userExecutor, Groups: []string{groupExecutors, groupInternal}},
	{Name: userQueues, Groups: []string{groupQueueAdmins, groupInternal}},
	{Name: userScheduler, Groups: []string{groupInternal}},
	{Name: userServer, Groups: []string{groupInternal}},
}

// outsideLinks are the links to a component that its table row's Clients
// do not hold: provider-armada manages queues on the server as
// internal-queues (queues.go), and a replicated scheduler's followers
// reach the leader as internal-server (schedulerConfig).
var outsideLinks = []link{
	{Key: "provider-armada", Target: componentServer, User: userQueues},
	{Key: "leader.leaderConnection", Target: "scheduler", User: userServer},
}

// apiUsers are the basic-auth users c's API accepts: the internal users
// some link authenticates to it as, and, if it serves users, the spec's
// basic users. A component holds the passwords of these and of the users
// it authenticates as, and no others (a remote executor's identities,
// which the scheduler also accepts, are remoteIdentities).
func (in *Install) apiUsers(c *component) []v1alpha1.BasicUser {
	if c.Auth == authNone {
		return nil
	}
	links := slices.Clone(outsideLinks)
	for i := range components {
		links = append(links, components[i].Clients...)
	}
	var out []v1alpha1.BasicUser
	for _, u := range internalUsers {
		if slices.ContainsFunc(links, func(l link) bool { return l.Target == c.Name && l.User == u.Name }) {
			out = append(out, u)
		}
	}
	if c.Auth == authUsers {
		out = append(out, in.Spec.Auth.BasicUsers...)
	}
	return out
}

// basicUsers lists every basic-auth user, internal ones first.
func (in *Install) basicUsers() []v1alpha1.BasicUser {
	return append(slices.Clone(internalUsers), in.Spec.Auth.BasicUsers...)
}

// passwordKeys are the keys of the credentials Secret: every basic-auth
// user's password and, with an in-cluster Redis, its password.
func (in *Install) passwordKeys() []string {
	var keys []string
	for _, u := range in.basicUsers() {
		keys = append(keys, u.Name)
	}
	if in.Spec.Redis.Mode == modeInCluster {
		keys = append(keys, redisPassword)
	}
	if in.Spec.Pulsar.Mode == modeInCluster {
		keys = append(keys, pulsarTokenKey)
	}
	return keys
}

// passwordEnv is the environment variable that overrides a basic-auth
// user's password in a component's config. Armada's config loader maps
// ARMADA_<KEY_PATH> onto keys present in a loaded file, so the generated
// config carries an empty placeholder for it.
func passwordEnv(user string) string {
	return "ARMADA_AUTH_BASICAUTH_USERS_" + strings.ToUpper(user) + "_PASSWORD"
}

// versionSuffix is a version as part of an object name: dots become dashes.
func versionSuffix(version string) string { return strings.ReplaceAll(version, ".", "-") }

// topic is a Pulsar topic's full name.
func (in *Install) topic(name string) string {
	return fmt.Sprintf("persistent://%s/%s/%s", in.Spec.Pulsar.Tenant, in.Spec.Pulsar.Namespace, name)
}

// annotationExternalName is the name of a managed resource's external
// resource.
const annotationExternalName = "crossplane.io/external-name"

// trimSlash drops a trailing slash.
func trimSlash(s string) string { return strings.TrimSuffix(s, "/") }

// toJSONMap converts a typed value into the JSON-compatible map an
// unstructured object holds.
func toJSONMap(v any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil
	}
	return m
}
