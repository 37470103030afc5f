package conformance

import (
	"net"
	"net/url"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
)

// farEnds are where an example's backing services really are, read from
// the claim and from what it composes, never from the components'
// configs: the test serves them there (see names), so a component whose
// rendered config names any other host or port does not reach them.
type farEnds struct {
	// Postgres, Redis and Pulsar are host:port addresses.
	Postgres, Redis []string
	Pulsar          string
}

// CloudNativePG names a Cluster's read-write Service <cluster>-rw, and the
// Apache Pulsar chart its brokers' Service <fullname>-broker; both serve
// on their protocol's standard port.
const (
	postgresPort = "5432"
	pulsarPort   = "6650"
	redisPort    = 6379
)

// FarEnds reads the example's far ends: for an external service, the
// address the claim gives; in the cluster, the Service of the composed
// CloudNativePG Cluster, Redis workload or Pulsar Helm release.
func (r *Render) FarEnds(workloads []podrun.Workload) (farEnds, error) {
	var f farEnds
	if h := r.XRString("", "spec", "postgres", "host"); h != "" {
		port := postgresPort
		if p, ok, _ := unstructured.NestedFieldNoCopy(r.XR.Object, "spec", "postgres", "port"); ok {
			if s := toString(p); s != "" {
				port = s
			}
		}
		f.Postgres = append(f.Postgres, net.JoinHostPort(h, port))
	}
	addrs, _, _ := unstructured.NestedStringSlice(r.XR.Object, "spec", "redis", "addrs")
	f.Redis = append(f.Redis, addrs...)
	if raw := r.XRString("", "spec", "pulsar", "url"); raw != "" {
		u, err := url.Parse(raw)
		if err != nil {
			return f, errors.Wrap(err, "cannot parse spec.pulsar.url")
		}
		f.Pulsar = u.Host
	}
	for _, u := range r.Objects {
		switch {
		case u.GetKind() == "Cluster" && strings.HasPrefix(u.GetAPIVersion(), "postgresql.cnpg.io/"):
			f.Postgres = append(f.Postgres, net.JoinHostPort(u.GetName()+"-rw."+u.GetNamespace()+".svc", postgresPort))
		case u.GetKind() == "Release" && strings.HasPrefix(u.GetAPIVersion(), "helm.") && f.Pulsar == "":
			name, _, _ := unstructured.NestedString(u.Object, "spec", "forProvider", "values", "fullnameOverride")
			ns, _, _ := unstructured.NestedString(u.Object, "spec", "forProvider", "namespace")
			if name == "" || ns == "" {
				return f, errors.Errorf("Helm Release %s sets no fullnameOverride and namespace to find its brokers by", u.GetName())
			}
			f.Pulsar = net.JoinHostPort(name+"-broker."+ns+".svc", pulsarPort)
		}
	}
	for _, w := range workloads {
		for _, c := range w.Pod.Containers {
			if podrun.KindOfImage(c.Image) != podrun.ArmadaImage && strings.Contains(c.Image, "redis") {
				f.Redis = append(f.Redis, r.ServiceAuthorities(w, redisPort)...)
			}
		}
	}
	return f, nil
}

func toString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	default:
		return ""
	}
}
