package armadaclient

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
)

// secretValue returns the value sel selects. A namespaced config may only
// read its own namespace; a cluster config must name one. Errors name the
// Secret and key, never the value.
func secretValue(ctx context.Context, kube client.Reader, c Config, field string, sel armadav1.SecretKeySelector) ([]byte, error) {
	ns := sel.Namespace
	switch {
	case c.Namespace != "" && ns == "":
		ns = c.Namespace
	case c.Namespace != "" && ns != c.Namespace:
		return nil, errors.Errorf("%s: a ProviderConfig may only read Secrets in its own namespace %q, not %q", field, c.Namespace, ns)
	case c.Namespace == "" && ns == "":
		return nil, errors.Errorf("%s: a ClusterProviderConfig's Secret reference must set namespace", field)
	}
	s := &corev1.Secret{}
	if err := kube.Get(ctx, types.NamespacedName{Namespace: ns, Name: sel.Name}, s); err != nil {
		return nil, errors.Wrapf(err, "cannot get Secret %s/%s for %s", ns, sel.Name, field)
	}
	v, ok := s.Data[sel.Key]
	if !ok || len(v) == 0 {
		return nil, errors.Errorf("%s: Secret %s/%s has no key %q (or it is empty)", field, ns, sel.Name, sel.Key)
	}
	return v, nil
}
