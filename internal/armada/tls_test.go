package armada

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"maps"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// withTLS turns spec.tls on.
func withTLS(s *v1alpha1.ArmadaSpec) { s.TLS = &v1alpha1.TLS{Enabled: ptr.To(true)} }

// renderTLS renders s with TLS on, every migration complete, a random
// source keyed by key and o's TLS observation.
func renderTLS(t *testing.T, s v1alpha1.ArmadaSpec, key string, observed map[string][]byte, created time.Time) (*Install, *Output) {
	t.Helper()
	in, errs := New(claimed(s))
	if len(errs) > 0 {
		t.Fatalf("New(...): %v", errs)
	}
	out, err := Render(in, Options{Observed: Observed{Jobs: migrated(t, s), TLS: observed}, Rand: KeyedRand([]byte(key), "xr"), Created: created})
	if err != nil {
		t.Fatalf("Render(...): %v", err)
	}
	return in, out
}

// tlsData is the rendered TLS Secret's data, or nil.
func tlsData(out *Output) map[string][]byte {
	o := find(out, keyTLS)
	if o == nil {
		return nil
	}
	return o.Object.(*corev1.Secret).Data
}

func certOf(t *testing.T, b []byte) *x509.Certificate {
	t.Helper()
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("not PEM: %q", b)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// handshake runs a TLS handshake between a server with cert and a
// client trusting roots (the system's if nil) for host, over loopback, and
// returns the client's error once it has read a byte the server sent.
func handshake(t *testing.T, cert tls.Certificate, roots *x509.CertPool, host string) error {
	t.Helper()
	lis, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lis.Close() }()
	go func() {
		c, err := lis.Accept()
		if err != nil {
			return
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = c.Write([]byte{1})
		_ = c.Close()
	}()
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: &tls.Config{RootCAs: roots, ServerName: host, MinVersion: tls.VersionTLS12}}
	c, err := d.DialContext(t.Context(), "tcp", lis.Addr().String())
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, err = c.Read(make([]byte, 1))
	return err
}

// TestTLSCertificates proves the generated CA and certificates work with
// Go's TLS stack, which every Armada component uses: a client trusting the
// CA accepts each server for each name it is dialled by, a client without
// the CA refuses it, and validity comes from the XR's creation time.
func TestTLSCertificates(t *testing.T) {
	created := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	in, out := renderTLS(t, spec(withTLS), "k", nil, created)
	data := tlsData(out)
	if data == nil {
		t.Fatal("no TLS Secret composed")
	}
	ca := certOf(t, data[tlsCAFile])
	if !ca.IsCA || !ca.NotBefore.Equal(created) || !ca.NotAfter.Equal(created.Add(tlsCAValidity)) {
		t.Errorf("CA: IsCA %t, valid %s to %s; want a CA valid from %s for %s", ca.IsCA, ca.NotBefore, ca.NotAfter, created, tlsCAValidity)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	hosts := map[string][]string{
		"server":     {in.serviceHost("server"), in.object("server")},
		"scheduler":  {in.serviceHost("scheduler"), in.object("scheduler") + "-0." + in.object("scheduler-headless") + "." + in.Namespace + ".svc"},
		"lookout":    {in.serviceHost("lookout"), in.object("lookout")},
		"binoculars": {in.serviceHost("binoculars"), in.object("binoculars"), in.object("binoculars") + "." + in.Namespace},
	}
	// Each certificate is for its own component's names only.
	foreign := map[string]string{"server": "lookout", "scheduler": "server", "lookout": "server", "binoculars": "lookout"}
	for name, names := range hosts {
		pair, err := tls.X509KeyPair(data[name+".crt"], data[name+".key"])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, h := range names {
			if err := handshake(t, pair, roots, h); err != nil {
				t.Errorf("%s: a client trusting the CA refuses it as %s: %v", name, h, err)
			}
		}
		if err := handshake(t, pair, nil, names[0]); err == nil {
			t.Errorf("%s: a client trusting only the system roots accepts it", name)
		}
		if other := foreign[name]; handshake(t, pair, roots, in.serviceHost(other)) == nil {
			t.Errorf("%s: a client accepts it for %s's name", name, other)
		}
	}
	if got := len(data); got != 10 {
		t.Errorf("TLS Secret has %d keys, want 10 (CA, server, scheduler, lookout and binoculars certificate and key): %v", got, keysOf(data))
	}
}

func keysOf(m map[string][]byte) []string { return slices.Sorted(maps.Keys(m)) }

// TestTLSGeneratedOnce proves generation is deterministic and that
// observed certificates are reused, whatever the random source, while what
// no longer fits is reissued.
func TestTLSGeneratedOnce(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	_, first := renderTLS(t, spec(withTLS), "key-a", nil, created)
	a := tlsData(first)
	_, again := renderTLS(t, spec(withTLS), "key-a", nil, created)
	if diff := cmp.Diff(a, tlsData(again)); diff != "" {
		t.Errorf("the same request gives different certificates (-first +second):\n%s", diff)
	}
	_, other := renderTLS(t, spec(withTLS), "key-b", nil, created)
	if bytes.Equal(a[tlsCAKey], tlsData(other)[tlsCAKey]) {
		t.Error("another key gives the same CA key: the keys are not from the keyed random stream")
	}

	only := func(keys ...string) map[string][]byte {
		m := map[string][]byte{}
		for _, k := range keys {
			m[k] = a[k]
		}
		return m
	}
	cases := map[string]struct {
		reason   string
		observed map[string][]byte
		// reused are the keys that must equal the observed ones.
		reused []string
		// reissued are the keys that must differ from the first render's.
		reissued []string
	}{
		"AllObserved": {
			reason:   "A new process key (a restarted function) changes nothing once the Secret is observed.",
			observed: a,
			reused:   []string{tlsCAFile, tlsCAKey, "server.crt", "server.key", "scheduler.crt", "scheduler.key"},
		},
		"OnlyCA": {
			reason:   "Missing certificates are issued by the observed CA.",
			observed: only(tlsCAFile, tlsCAKey),
			reused:   []string{tlsCAFile, tlsCAKey},
			reissued: []string{"server.crt", "scheduler.crt"},
		},
		"CAKeyMismatch": {
			reason:   "A CA whose key does not match is replaced, and so are the certificates it signed.",
			observed: map[string][]byte{tlsCAFile: a[tlsCAFile], tlsCAKey: a["server.key"], "server.crt": a["server.crt"], "server.key": a["server.key"]},
			reissued: []string{tlsCAFile, tlsCAKey, "server.crt"},
		},
		"WrongNames": {
			reason:   "A certificate for other names (here the scheduler's, stored as the server's) is reissued.",
			observed: map[string][]byte{tlsCAFile: a[tlsCAFile], tlsCAKey: a[tlsCAKey], "server.crt": a["scheduler.crt"], "server.key": a["scheduler.key"]},
			reused:   []string{tlsCAFile, tlsCAKey},
			reissued: []string{"server.crt"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, out := renderTLS(t, spec(withTLS), "key-b", tc.observed, created)
			got := tlsData(out)
			for _, k := range tc.reused {
				if !bytes.Equal(got[k], tc.observed[k]) {
					t.Errorf("%s\n%s was not reused", tc.reason, k)
				}
			}
			for _, k := range tc.reissued {
				if bytes.Equal(got[k], a[k]) {
					t.Errorf("%s\n%s was not reissued", tc.reason, k)
				}
			}
			ca := certOf(t, got[tlsCAFile])
			for _, c := range []string{"server", "scheduler"} {
				if err := certOf(t, got[c+".crt"]).CheckSignatureFrom(ca); err != nil {
					t.Errorf("%s\nthe %s certificate is not signed by the composed CA: %v", tc.reason, c, err)
				}
			}
		})
	}
}

// componentCfg is an instance's rendered config.
func componentCfg(t *testing.T, out *Output, name string) map[string]any {
	t.Helper()
	s := find(out, name+"-config").Object.(*corev1.Secret)
	var m map[string]any
	if err := yaml.Unmarshal(s.Data[configKey], &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func get(m map[string]any, path ...string) any {
	var v any = m
	for _, k := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

// tlsMount is what an instance's pod mounts of the TLS Secret, as
// Secret key to file, and its SSL_CERT_FILE.
func tlsMount(t *testing.T, out *Output, name string) (items map[string]string, sslCertFile string, probe corev1.URIScheme) {
	t.Helper()
	tpl := podTemplateOf(t, out, name)
	for _, v := range tpl.Spec.Volumes {
		if v.Secret != nil && strings.HasSuffix(v.Secret.SecretName, "-tls") {
			items = map[string]string{}
			for _, it := range v.Secret.Items {
				items[it.Key] = it.Path
			}
		}
	}
	c := tpl.Spec.Containers[0]
	for _, e := range c.Env {
		if e.Name == "SSL_CERT_FILE" {
			sslCertFile = e.Value
		}
	}
	if p := c.ReadinessProbe; p != nil && p.HTTPGet != nil {
		probe = p.HTTPGet.Scheme
	}
	return items, sslCertFile, probe
}

// TestTLSWiring proves what spec.tls changes in each component and that it
// changes nothing when off.
func TestTLSWiring(t *testing.T) {
	ing := func(s *v1alpha1.ArmadaSpec) {
		s.Ingress = &v1alpha1.Ingress{GRPCHost: "grpc.example", RESTHost: "rest.example", LookoutHost: "lookout.example", ExecutorAPIHost: "exec.example"}
	}
	serverTLS := map[string]any{"enabled": true, "certPath": "/etc/armada/tls/tls.crt", "keyPath": "/etc/armada/tls/tls.key"}
	caOnly := map[string]string{"ca.crt": "ca.crt"}
	type want struct {
		TLSBlock    any
		NoTLS       any
		Items       map[string]string
		SSLCertFile string
		Probe       corev1.URIScheme
	}
	cases := map[string]struct {
		reason    string
		spec      v1alpha1.ArmadaSpec
		instance  string
		tlsPath   []string
		client    []string
		want      want
		protocols map[string]string
	}{
		"ServerOn": {
			reason:   "On by default, the server serves gRPC and HTTPS with its certificate and dials the scheduler verifying the CA.",
			spec:     spec(ing),
			instance: "server", tlsPath: []string{"grpc", "tls"}, client: []string{"schedulerApiConnection", "forceNoTls"},
			want: want{
				TLSBlock: serverTLS, NoTLS: false, SSLCertFile: "/etc/armada/tls/ca.crt", Probe: corev1.URISchemeHTTPS,
				Items: map[string]string{"ca.crt": "ca.crt", "server.crt": "tls.crt", "server.key": "tls.key"},
			},
			protocols: map[string]string{"ingress-grpc": "GRPCS", "ingress-rest": "HTTPS", "ingress-lookout": "HTTPS", "ingress-executor-api": "GRPCS"},
		},
		"SchedulerOn": {
			reason:   "The scheduler serves gRPC with its certificate; its HTTP port (health) stays plain.",
			spec:     spec(withTLS),
			instance: "scheduler", tlsPath: []string{"grpc", "tls"}, client: []string{"armadaApi", "forceNoTls"},
			want: want{
				TLSBlock: serverTLS, NoTLS: false, SSLCertFile: "/etc/armada/tls/ca.crt", Probe: "",
				Items: map[string]string{"ca.crt": "ca.crt", "scheduler.crt": "tls.crt", "scheduler.key": "tls.key"},
			},
		},
		"ExecutorOn": {
			reason:   "A local executor only trusts the CA: it mounts no key.",
			spec:     spec(withTLS),
			instance: "executor-local", client: []string{"executorApiConnection", "forceNoTls"},
			want: want{NoTLS: false, SSLCertFile: "/etc/armada/tls/ca.crt", Items: caOnly},
		},
		"LookoutOn": {
			reason:   "Lookout serves its API, UI and /health over HTTPS with its certificate through its TLS sidecar (HTTP/1.1; its own tls block, whose HTTP/2 closes idle connections, stays unset); it dials no TLS server, so it has no SSL_CERT_FILE.",
			spec:     spec(withTLS),
			instance: "lookout", tlsPath: []string{"tls"},
			want: want{
				Probe: corev1.URISchemeHTTPS,
				Items: map[string]string{"ca.crt": "ca.crt", "lookout.crt": "tls.crt", "lookout.key": "tls.key"},
			},
		},
		"BinocularsOn": {
			reason:   "Binoculars serves both ports through its TLS sidecars with its own certificate (probes over HTTPS); its own grpc.tls stays unset, as in Armada v0.22.x its REST gateway dials its gRPC port in plaintext.",
			spec:     spec(ing, withTLS),
			instance: "binoculars", tlsPath: []string{"grpc", "tls"},
			want: want{
				Probe: corev1.URISchemeHTTPS,
				Items: map[string]string{"ca.crt": "ca.crt", "binoculars.crt": "tls.crt", "binoculars.key": "tls.key"},
			},
		},
		"LookoutOff": {
			reason:   "Explicitly off: Lookout serves plain HTTP, nothing mounted.",
			spec:     spec(func(s *v1alpha1.ArmadaSpec) { s.TLS = &v1alpha1.TLS{Enabled: ptr.To(false)} }),
			instance: "lookout", tlsPath: []string{"tls"},
		},
		"ServerOff": {
			reason:   "Explicitly off: plaintext, nothing mounted.",
			spec:     spec(ing, func(s *v1alpha1.ArmadaSpec) { s.TLS = &v1alpha1.TLS{Enabled: ptr.To(false)} }),
			instance: "server", tlsPath: []string{"grpc", "tls"}, client: []string{"schedulerApiConnection", "forceNoTls"},
			want:      want{NoTLS: true},
			protocols: map[string]string{"ingress-grpc": "GRPC", "ingress-rest": "", "ingress-lookout": "", "ingress-executor-api": "GRPC"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, out := renderTLS(t, tc.spec, "k", nil, time.Time{})
			cfg := componentCfg(t, out, tc.instance)
			if tc.tlsPath != nil {
				if diff := cmp.Diff(tc.want.TLSBlock, get(cfg, tc.tlsPath...)); diff != "" {
					t.Errorf("%s\nTLS block (-want +got):\n%s", tc.reason, diff)
				}
			}
			if tc.client != nil {
				if diff := cmp.Diff(tc.want.NoTLS, get(cfg, tc.client...)); diff != "" {
					t.Errorf("%s\n%s (-want +got):\n%s", tc.reason, strings.Join(tc.client, "."), diff)
				}
			}
			items, ssl, probe := tlsMount(t, out, tc.instance)
			if diff := cmp.Diff(want{Items: tc.want.Items, SSLCertFile: tc.want.SSLCertFile, Probe: tc.want.Probe},
				want{Items: items, SSLCertFile: ssl, Probe: probe}); diff != "" {
				t.Errorf("%s\npod (-want +got):\n%s", tc.reason, diff)
			}
			for key, p := range tc.protocols {
				got := find(out, key).Object.(*networkingv1.Ingress).Annotations["nginx.ingress.kubernetes.io/backend-protocol"]
				if got != p {
					t.Errorf("%s\n%s backend-protocol = %q, want %q", tc.reason, key, got, p)
				}
			}
		})
	}
}

// TestTLSKeysOnlyInTheTLSSecret proves no private key lands anywhere but
// the TLS Secret, and that a changed CA rolls the pods that trust it.
func TestTLSKeysOnlyInTheTLSSecret(t *testing.T) {
	_, out := renderTLS(t, spec(withTLS), "k", nil, time.Time{})
	for _, o := range out.Objects {
		if o.Key == keyTLS {
			continue
		}
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("PRIVATE KEY")) {
			t.Errorf("%s holds a private key", o.Key)
		}
	}
	b, err := yaml.Marshal(out.Status)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("PRIVATE KEY")) {
		t.Error("status holds a private key")
	}
	_, other := renderTLS(t, spec(withTLS), "other", nil, time.Time{})
	for _, name := range []string{"server", "scheduler", "executor-local", "lookout", "binoculars"} {
		a := podTemplateOf(t, out, name).Annotations[annotationConfigHash]
		b := podTemplateOf(t, other, name).Annotations[annotationConfigHash]
		if a == b {
			t.Errorf("%s: another CA leaves the pod template's %s at %s: its pods would not roll", name, annotationConfigHash, a)
		}
	}
	for _, name := range []string{"lookout-ingester", "event-ingester"} {
		if a, b := podTemplateOf(t, out, name).Annotations[annotationConfigHash], podTemplateOf(t, other, name).Annotations[annotationConfigHash]; a != b {
			t.Errorf("%s, which uses no TLS file, rolls on another CA: %s != %s", name, a, b)
		}
	}
}

// TestTLSProviderConfig proves provider-armada dials the server the way
// the components do: trusting the private CA when TLS is on, in plaintext
// only when it is explicitly off.
func TestTLSProviderConfig(t *testing.T) {
	cases := map[string]struct {
		reason string
		spec   v1alpha1.ArmadaSpec
		want   armadav1.TLS
	}{
		"Default": {
			reason: "TLS is on by default: the CA from the TLS Secret, the server's Service name checked.",
			spec:   spec(),
			want:   armadav1.TLS{CASecretRef: &armadav1.SecretKeySelector{Name: "armada-tls", Key: "ca.crt"}},
		},
		"Off": {
			reason: "With TLS off the link is plaintext, explicitly.",
			spec:   spec(func(s *v1alpha1.ArmadaSpec) { s.TLS = &v1alpha1.TLS{Enabled: ptr.To(false)} }),
			want:   armadav1.TLS{Insecure: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in, errs := New(claimed(tc.spec))
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if diff := cmp.Diff(tc.want, in.providerConfig().Spec.TLS); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestTLSObservedSecret proves the TLS Secret is reused through the
// path a reconcile takes: the observed Secret as Crossplane reports it
// (base64 data in an unstructured object) read by Observe, then a render
// with another random source, which must compose it byte for byte.
func TestTLSObservedSecret(t *testing.T) {
	s := spec()
	_, first := renderTLS(t, s, "process-1", nil, time.Time{})
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(find(first, keyTLS).Object)
	if err != nil {
		t.Fatal(err)
	}
	o := Observe(map[string]*unstructured.Unstructured{keyTLS: {Object: m}})
	o.Jobs = migrated(t, s)
	in, errs := New(claimed(s))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	again, err := Render(in, Options{Observed: o, Rand: KeyedRand([]byte("process-2"), "xr")})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tlsData(first), tlsData(again)); diff != "" {
		t.Errorf("a restarted function (another key) changed the observed TLS Secret (-observed +rendered):\n%s", diff)
	}
	for _, name := range []string{"server", "scheduler", "executor-local"} {
		if a, b := podTemplateOf(t, first, name).Annotations[annotationConfigHash], podTemplateOf(t, again, name).Annotations[annotationConfigHash]; a != b {
			t.Errorf("%s: pods would roll (%s -> %s) although nothing changed", name, a, b)
		}
	}
}

// BenchmarkTLS measures what TLS adds to a render: generating the CA and
// certificates (first reconcile), and checking and reusing observed ones
// (every later reconcile).
func BenchmarkTLS(b *testing.B) {
	in, errs := New(claimed(spec()))
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	rand := KeyedRand([]byte("bench"), "xr")
	r := &renderer{in: in, opt: Options{Rand: rand}}
	if err := r.tls(); err != nil {
		b.Fatal(err)
	}
	observed := r.tlsData
	for _, bc := range []struct {
		name     string
		observed map[string][]byte
	}{{"Generate", nil}, {"Reuse", observed}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := &renderer{in: in, opt: Options{Rand: rand, Observed: Observed{TLS: bc.observed}}}
				if err := r.tls(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
