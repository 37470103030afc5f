package controlplane

import (
	"context"
	"encoding/base64"
	"net/http"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
)

// ProviderConfigName names the ProviderConfigs the control plane creates
// for provider-kubernetes. It is the name managed resources use by default.
const ProviderConfigName = "default"

// KubeconfigSecretName names the Secret in CrossplaneNamespace that holds
// the control plane's kubeconfig, under KubeconfigSecretKey, for
// provider-kubernetes' ProviderConfigs.
const (
	KubeconfigSecretName = "armada-controlplane-kubeconfig"
	KubeconfigSecretKey  = "kubeconfig"
)

// convertedCRD is provider-kubernetes' CRD with a conversion webhook.
const convertedCRD = "objects.kubernetes.crossplane.io"

// providerCRDs returns provider-kubernetes' CRDs, with the cluster-scoped
// Object's conversion webhook pointed at the provider on 127.0.0.1: the
// packaged CRD names a Service without a name, which the API server
// rejects.
func (c *ControlPlane) providerCRDs() ([]*unstructured.Unstructured, error) {
	crds, err := manifest.ReadDir(c.opts.ProviderKubernetesCRDDir)
	if err != nil {
		return nil, err
	}
	for _, crd := range crds {
		if crd.GetName() != convertedCRD {
			continue
		}
		cc := map[string]any{
			"url":      "https://127.0.0.1:" + strconv.Itoa(c.ports.providerWebhook) + "/convert",
			"caBundle": base64.StdEncoding.EncodeToString(c.ca.certPEM),
		}
		if err := unstructured.SetNestedMap(crd.Object, cc, "spec", "conversion", "webhook", "clientConfig"); err != nil {
			return nil, errors.Wrapf(err, "cannot set conversion webhook of CRD %s", convertedCRD)
		}
	}
	return crds, nil
}

// startProviderFirst starts provider-kubernetes and creates the kubeconfig
// Secret and ProviderConfigs it authenticates with.
func (c *ControlPlane) startProviderFirst(ctx context.Context) error {
	args := []string{
		"--webhook-port=" + strconv.Itoa(c.ports.providerWebhook),
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(c.ports.providerMetrics),
		"--health-probe-bind-addr=127.0.0.1:" + strconv.Itoa(c.ports.providerHealth),
		// Without it an Object wrapping a Secret mirrors the Secret's data
		// into its status.atProvider.manifest: a remote executor's identity
		// token would land in the control cluster in clear. Connection
		// details are read from the remote object, so they still work.
		"--sanitize-secrets",
	}
	if c.opts.ProviderPollInterval > 0 {
		args = append(args, "--poll="+c.opts.ProviderPollInterval.String())
	}
	if c.opts.Debug {
		args = append(args, "--debug")
	}
	p := c.newProcess(ProcProviderKubernetes, c.opts.ProviderKubernetes, args, []string{
		"KUBECONFIG=" + c.kubeconfig,
		// The conversion webhook's serving certificate.
		"TLS_SERVER_CERTS_DIR=" + c.tlsDirs.provider,
	})
	if err := p.start(); err != nil {
		return err
	}
	url := "http://127.0.0.1:" + strconv.Itoa(c.ports.providerHealth) + "/readyz"
	if err := p.waitReady(ctx, stepTimeout, "provider-kubernetes /readyz", func(ctx context.Context) error {
		return httpGetOK(ctx, http.DefaultClient, url, "ok")
	}); err != nil {
		return err
	}
	kc, err := c.kubeconfigBytes()
	if err != nil {
		return err
	}
	s := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: CrossplaneNamespace, Name: KubeconfigSecretName},
		Data:       map[string][]byte{KubeconfigSecretKey: kc},
	}
	if err := c.client.Create(ctx, s); err != nil {
		return errors.Wrap(err, "cannot create kubeconfig Secret")
	}
	return c.apply(ctx,
		providerConfig("kubernetes.m.crossplane.io/v1alpha1", "ClusterProviderConfig", ""),
		providerConfig("kubernetes.m.crossplane.io/v1alpha1", "ProviderConfig", CrossplaneNamespace),
		providerConfig("kubernetes.crossplane.io/v1alpha1", "ProviderConfig", ""),
	)
}

// ApplyProviderConfig creates or updates a namespaced provider-kubernetes
// ProviderConfig named ProviderConfigName in namespace, using the control
// plane's kubeconfig. Namespaced managed resources select it with
// providerConfigRef {kind: ProviderConfig, name: default}; by default they
// use the ClusterProviderConfig of the same name, which Start creates.
func (c *ControlPlane) ApplyProviderConfig(ctx context.Context, namespace string) error {
	return c.apply(ctx, providerConfig("kubernetes.m.crossplane.io/v1alpha1", "ProviderConfig", namespace))
}

// providerConfig returns a provider-kubernetes ProviderConfig of the given
// kind that reads the kubeconfig Secret. An empty namespace means a
// cluster-scoped kind.
func providerConfig(apiVersion, kind, namespace string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion,
		"kind":       kind,
		"metadata":   map[string]any{"name": ProviderConfigName},
		"spec": map[string]any{"credentials": map[string]any{
			"source": "Secret",
			"secretRef": map[string]any{
				"namespace": CrossplaneNamespace,
				"name":      KubeconfigSecretName,
				"key":       KubeconfigSecretKey,
			},
		}},
	}}
	if namespace != "" {
		u.SetNamespace(namespace)
	}
	return u
}
