package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"

	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// adminUser is the static-token user the kubeconfig authenticates as; it is
// in system:masters.
const adminUser = "admin"

// generatePKI creates the throwaway CA, every certificate the processes use,
// the service account key pair and the static token file.
func (c *ControlPlane) generatePKI(_ context.Context) error {
	ca, err := newCertAuthority("armada-controlplane-ca")
	if err != nil {
		return err
	}
	c.ca = ca
	pki := filepath.Join(c.dir, "pki")
	c.tlsDirs = tlsDirs{
		apiServer:        filepath.Join(pki, "kube-apiserver"),
		crossplaneClient: filepath.Join(pki, "crossplane-client"),
		function:         filepath.Join(pki, "function-armada"),
		provider:         filepath.Join(pki, "provider-kubernetes"),
		kubeletClient:    filepath.Join(pki, "kube-apiserver-kubelet-client"),
	}
	for dir, o := range map[string]certOptions{
		c.tlsDirs.apiServer:        apiServerCert(),
		c.tlsDirs.crossplaneClient: clientCert("crossplane"),
		c.tlsDirs.function:         serverCert("function-armada"),
		c.tlsDirs.provider:         serverCert("provider-kubernetes"),
		c.tlsDirs.kubeletClient:    clientCert("kube-apiserver-kubelet-client"),
	} {
		if err := ca.writeTLSDir(dir, o); err != nil {
			return err
		}
	}
	if c.saPub, c.saKey, err = writeServiceAccountKeys(pki); err != nil {
		return err
	}
	if c.token, err = randomToken(); err != nil {
		return err
	}
	c.tokenFile = filepath.Join(pki, "tokens.csv")
	line := fmt.Sprintf("%s,%s,%s,system:masters\n", c.token, adminUser, adminUser)
	return errors.Wrap(os.WriteFile(c.tokenFile, []byte(line), 0o600), "cannot write token file")
}

// apiServerURL returns the API server's URL.
func (c *ControlPlane) apiServerURL() string {
	return "https://127.0.0.1:" + strconv.Itoa(c.ports.apiServer)
}

// startAPIServer starts kube-apiserver, waits for /readyz and writes the
// kubeconfig, REST config and client the rest of the control plane uses.
func (c *ControlPlane) startAPIServer(ctx context.Context) error {
	p := c.newProcess(ProcKubeAPIServer, c.opts.KubeAPIServer, c.apiServerArgs(), nil)
	if err := p.start(); err != nil {
		return err
	}
	if err := c.waitAPIServer(ctx, p); err != nil {
		return err
	}
	return c.writeKubeconfig()
}

// apiServerArgs are kube-apiserver's flags.
func (c *ControlPlane) apiServerArgs() []string {
	url := c.apiServerURL()
	// The ServiceAccount admission plugin mounts a pod's token as a
	// cluster does, and refuses a pod whose ServiceAccount is missing:
	// on for a real node's pods (Workloads), off where pods run as local
	// processes or on KWOK (the harness mounts tokens itself).
	node := []string{"--disable-admission-plugins=ServiceAccount"}
	if c.opts.Workloads {
		// A real node's kubelet (pods' logs, exec) is reached at its
		// InternalIP with a client certificate of the control plane's CA,
		// which the kubelet trusts.
		node = []string{
			"--enable-admission-plugins=ServiceAccount",
			"--kubelet-preferred-address-types=InternalIP",
			"--kubelet-client-certificate=" + filepath.Join(c.tlsDirs.kubeletClient, fileTLSCert),
			"--kubelet-client-key=" + filepath.Join(c.tlsDirs.kubeletClient, fileTLSKey),
		}
	}
	return append([]string{
		"--etcd-servers=" + c.etcdURL(),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// 1.37 refuses a loopback advertise address with the default
		// endpoint reconciler.
		"--endpoint-reconciler-type=none",
		"--secure-port=" + strconv.Itoa(c.ports.apiServer),
		"--cert-dir=" + filepath.Join(c.dir, "kube-apiserver"),
		"--tls-cert-file=" + filepath.Join(c.tlsDirs.apiServer, fileTLSCert),
		"--tls-private-key-file=" + filepath.Join(c.tlsDirs.apiServer, fileTLSKey),
		// Room for some 65,000 Services: TestManyTeams alone composes
		// about 180 at once beside other tests' (a /24 holds 254).
		"--service-cluster-ip-range=" + ServiceRange,
		"--allow-privileged=true",
		"--service-account-issuer=" + url,
		"--service-account-key-file=" + c.saPub,
		"--service-account-signing-key-file=" + c.saKey,
		"--token-auth-file=" + c.tokenFile,
		"--authorization-mode=RBAC",
	}, node...)
}

// waitAPIServer waits until kube-apiserver answers /readyz.
func (c *ControlPlane) waitAPIServer(ctx context.Context, p *process) error {
	url := c.apiServerURL()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.ca.certPEM)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	return p.waitReady(ctx, stepTimeout, "kube-apiserver /readyz", func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/readyz", http.NoBody)
		if err != nil {
			return errors.Wrap(err, "cannot create request")
		}
		req.Header.Set("Authorization", "Bearer "+c.token)
		return doOK(hc, req, "ok")
	})
}

// kubeconfigBytes returns a kubeconfig for the admin token user.
func (c *ControlPlane) kubeconfigBytes() ([]byte, error) {
	const name = "armada-controlplane"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: c.apiServerURL(), CertificateAuthorityData: c.ca.certPEM}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: c.token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	b, err := clientcmd.Write(*cfg)
	return b, errors.Wrap(err, "cannot serialize kubeconfig")
}

// writeKubeconfig writes the kubeconfig and builds the REST config and
// client.
func (c *ControlPlane) writeKubeconfig() error {
	b, err := c.kubeconfigBytes()
	if err != nil {
		return err
	}
	c.kubeconfig = filepath.Join(c.dir, "kubeconfig")
	if err := os.WriteFile(c.kubeconfig, b, 0o600); err != nil {
		return errors.Wrap(err, "cannot write kubeconfig")
	}
	c.restConfig = &rest.Config{
		Host:            c.apiServerURL(),
		BearerToken:     c.token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.ca.certPEM},
		QPS:             100,
		Burst:           200,
	}
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return errors.Wrap(err, "cannot build scheme")
	}
	if err := extv1.AddToScheme(s); err != nil {
		return errors.Wrap(err, "cannot build scheme")
	}
	// The client serves the control plane and tests; deprecation warnings
	// (XRD v1, finalizer names) are noise there.
	cfg := c.RESTConfig()
	cfg.WarningHandlerWithContext = rest.NoWarnings{}
	c.client, err = client.New(cfg, client.Options{Scheme: s})
	return errors.Wrap(err, "cannot create client")
}

// ServiceRange is the control plane's Service range: the upper half of
// 198.18.0.0/15, which is reserved for benchmarking (RFC 2544) and used
// by no real network; a real node's pods take /24s of the lower half.
// KubernetesService is its first address, the kubernetes Service's.
const (
	ServiceRange      = "198.19.0.0/16"
	KubernetesService = "198.19.0.1"
)

// apiServerCert is the API server's serving certificate: for 127.0.0.1,
// localhost, and the kubernetes Service's address and names, which pods
// on a real node reach it by.
func apiServerCert() certOptions {
	o := serverCert("kube-apiserver")
	o.IPs = append(o.IPs, net.ParseIP(KubernetesService))
	o.DNSNames = append(o.DNSNames, "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local")
	return o
}

// workloadControllers are kube-controller-manager's controllers
// Options.Workloads adds.
const workloadControllers = "serviceaccount-controller,deployment-controller,replicaset-controller,statefulset-controller," +
	"job-controller,endpointslice-controller,root-ca-certificate-publisher-controller"

// controllerManagerQPS is kube-controller-manager's client request rate.
const controllerManagerQPS = 200

// startControllerManager starts kube-controller-manager with only the
// garbage collector (which deletes composed resources when their XR goes),
// the namespace controller, the service-account token controller
// (which fills service-account-token Secrets, such as a remote executor's
// identity in a worker cluster), the ClusterRole aggregation controller
// (Crossplane's ClusterRole aggregates its rules) and the resource quota
// controller (a ResourceQuota counts only once it computed the quota's
// status: job namespaces carry the tenancy policy's), the service-account
// controller with Options.ServiceAccounts, and waits for its /healthz.
func (c *ControlPlane) startControllerManager(ctx context.Context) error {
	port := strconv.Itoa(c.ports.controllerManager)
	controllers := "garbage-collector-controller,namespace-controller,serviceaccount-token-controller,clusterrole-aggregation-controller,resourcequota-controller"
	if c.opts.ServiceAccounts && !c.opts.Workloads {
		controllers += ",serviceaccount-controller"
	}
	if c.opts.JobFlow {
		controllers += "," + jobFlowControllers
	}
	if c.opts.Workloads {
		controllers += "," + workloadControllers
	}
	p := c.newProcess(ProcKubeControllerManager, c.opts.KubeControllerManager, []string{
		"--kubeconfig=" + c.kubeconfig,
		"--controllers=" + controllers,
		"--service-account-private-key-file=" + c.saKey,
		"--root-ca-file=" + filepath.Join(c.tlsDirs.apiServer, fileCACert),
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + port,
		"--cert-dir=" + filepath.Join(c.dir, "kube-controller-manager"),
		"--authentication-skip-lookup=true",
		// Above client-go's default of 20 requests a second, so that the
		// garbage collector keeps up while a suite deletes dozens of
		// composed trees at once; the API server is local.
		"--kube-api-qps=" + strconv.Itoa(controllerManagerQPS),
		"--kube-api-burst=" + strconv.Itoa(2*controllerManagerQPS),
	}, nil)
	if err := p.start(); err != nil {
		return err
	}
	// Its serving certificate is self-signed; only liveness matters here.
	insecure := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // Loopback health probe of a self-signed server.
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: insecure}}
	return p.waitReady(ctx, stepTimeout, "kube-controller-manager /healthz", func(ctx context.Context) error {
		return httpGetOK(ctx, hc, "https://127.0.0.1:"+port+"/healthz", "ok")
	})
}
