package podrun

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// ServiceAccountMountPath is where the kubelet mounts a pod's ServiceAccount
// token, CA and namespace, and where client-go's in-cluster config reads them.
const ServiceAccountMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// serviceAccountTokenSeconds is the lifetime of a pod's token: the kubelet
// refreshes its tokens, the runner does not, so it outlives any test.
const serviceAccountTokenSeconds = 24 * 3600

// serviceAccount gives a pod what the kubelet gives one that mounts its
// ServiceAccount's token (automountServiceAccountToken not false): a
// TokenRequest token for that ServiceAccount, the API server's CA and the
// pod's namespace in a directory under root, to mount at
// ServiceAccountMountPath, and KUBERNETES_SERVICE_HOST and _PORT naming
// the API server. Armada's binaries then build their Kubernetes clients
// with rest.InClusterConfig, as in a cluster, with exactly the composed
// ServiceAccount's rights. A pod that mounts no token gets no credentials:
// dir is empty.
func (r *Runner) serviceAccount(w Workload, root string) (dir string, env []EnvVar, err error) {
	if a := w.Pod.AutomountServiceAccountToken; a != nil && !*a {
		return "", nil, nil
	}
	if r.o.APIServer == nil {
		return "", nil, errors.Errorf("%s mounts its ServiceAccount's token, but the runner has no API server to give it", w.ID())
	}
	name := w.Pod.ServiceAccountName
	if name == "" {
		name = "default"
	}
	namespace := w.Namespace
	if namespace == "" {
		namespace = r.o.Namespace
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	tr := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](serviceAccountTokenSeconds)}}
	if err := r.o.Client.SubResource("token").Create(ctx, sa, tr); err != nil {
		return "", nil, errors.Wrapf(err, "cannot request a token for %s's ServiceAccount %s/%s", w.ID(), namespace, name)
	}
	ca := r.o.APIServer.CAData
	if len(ca) == 0 && r.o.APIServer.CAFile != "" {
		if ca, err = os.ReadFile(r.o.APIServer.CAFile); err != nil {
			return "", nil, errors.Wrap(err, "cannot read the API server's CA")
		}
	}
	u, err := url.Parse(r.o.APIServer.Host)
	if err != nil || u.Hostname() == "" || u.Port() == "" {
		return "", nil, errors.Errorf("the API server's address %q has no host and port", r.o.APIServer.Host)
	}
	dir = filepath.Join(root, "serviceaccount")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, errors.Wrap(err, "cannot create the ServiceAccount directory")
	}
	for f, data := range map[string][]byte{"token": []byte(tr.Status.Token), "ca.crt": ca, "namespace": []byte(namespace)} {
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o600); err != nil {
			return "", nil, errors.Wrapf(err, "cannot write the ServiceAccount's %s", f)
		}
	}
	return dir, []EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: u.Hostname()}, {Name: "KUBERNETES_SERVICE_PORT", Value: u.Port()}}, nil
}
