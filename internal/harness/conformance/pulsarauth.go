package conformance

import (
	"crypto/rand"
	"slices"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/armadaproject/armada-crossplane/internal/armada"
	"github.com/armadaproject/armada-crossplane/internal/harness/testenv"
)

// chartBroker is how a render's in-cluster Pulsar (a provider-helm
// Release of the Apache Pulsar chart) configures its brokers'
// authentication and authorization, derived from the release's values and
// the rendered Secrets as the chart's broker templates derive them
// (broker-configmap.yaml: authenticationEnabled, authorizationEnabled,
// superUserRoles from auth.superUsers, tokenSecretKey from the mounted
// <release>-token-symmetric-key SECRETKEY; broker-statefulset.yaml: the
// brokers' own token from <release>-token-<auth.superUsers.broker>
// TOKEN). ok is false when the render composes no in-cluster Pulsar;
// client is the token of auth.superUsers.client, which Armada presents.
func chartBroker(t *testing.T, r *Render) (opts testenv.PulsarOptions, client string, ok bool) {
	t.Helper()
	var rel *unstructured.Unstructured
	for _, u := range r.Objects {
		if name, _, _ := unstructured.NestedString(u.Object, "spec", "forProvider", "chart", "name"); u.GetKind() == "Release" && name == "pulsar" {
			rel = u
		}
	}
	if rel == nil {
		return opts, "", false
	}
	auth, _, _ := unstructured.NestedMap(rel.Object, "spec", "forProvider", "values", "auth")
	on := func(p ...string) bool { v, _, _ := unstructured.NestedBool(auth, p...); return v }
	if !on("authentication", "enabled") {
		return opts, "", true
	}
	if !on("authentication", "jwt", "enabled") || !on("authentication", "jwt", "usingSecretKey") {
		t.Fatalf("the Pulsar release %s turns on authentication other than JWT with a symmetric key, which the test does not model", rel.GetName())
	}
	secret := func(name, key string) []byte {
		t.Helper()
		data, rendered, err := r.Secret(name)
		if err != nil {
			t.Fatal(err)
		}
		if !rendered || len(data[key]) == 0 {
			t.Fatalf("the Pulsar release %s mounts Secret %s key %s, which the render does not compose: its brokers would not start", rel.GetName(), name, key)
		}
		return data[key]
	}
	supers, _, _ := unstructured.NestedStringMap(auth, "superUsers")
	opts = testenv.PulsarOptions{
		TokenAuth:   true,
		TokenKey:    secret(rel.GetName()+"-token-symmetric-key", "SECRETKEY"),
		BrokerToken: string(secret(rel.GetName()+"-token-"+supers["broker"], "TOKEN")),
	}
	if on("authorization", "enabled") {
		for _, role := range supers {
			if role != "" {
				opts.SuperUserRoles = append(opts.SuperUserRoles, role)
			}
		}
		slices.Sort(opts.SuperUserRoles)
	}
	if supers["client"] != "" {
		client = string(secret(rel.GetName()+"-token-"+supers["client"], "TOKEN"))
	}
	return opts, client, true
}

// CheckPulsarRefusals checks that the example's broker admits a producer
// on topic with the token Armada presents and refuses one without a
// token, one with a token another key signed, and, with authorization,
// one the key signed for a role that is no superuser: a forged event
// needs Armada's token. An in-cluster Pulsar without token authentication
// fails the check; an external one without a token (the user's choice)
// has nothing to check.
func CheckPulsarRefusals(t *testing.T, svc *Services, topic string) {
	t.Helper()
	if svc.PulsarInCluster && svc.PulsarToken == "" {
		t.Fatal("the render's in-cluster Pulsar does not turn on token authentication: any pod that reaches a broker may publish events")
	}
	if svc.Pulsar == nil || svc.PulsarToken == "" {
		return
	}
	other := make([]byte, 32)
	if _, err := rand.Read(other); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		token string
		want  bool
	}{
		"ArmadaToken":  {token: svc.PulsarToken, want: true},
		"NoToken":      {want: false},
		"OtherKey":     {token: armada.PulsarToken(other, "armada"), want: false},
		"NotSuperUser": {token: svc.Pulsar.Token("intruder"), want: !svc.PulsarAuthorization},
	}
	for _, name := range []string{"ArmadaToken", "NoToken", "OtherKey", "NotSuperUser"} {
		tc := cases[name]
		t.Run(name, func(t *testing.T) {
			opts := pulsar.ClientOptions{URL: svc.Pulsar.ServiceURL(), OperationTimeout: 20 * time.Second, ConnectionTimeout: 10 * time.Second}
			if tc.token != "" {
				opts.Authentication = pulsar.NewAuthenticationToken(tc.token)
			}
			client, err := pulsar.NewClient(opts)
			if err != nil {
				t.Fatalf("cannot create a Pulsar client: %v", err)
			}
			defer client.Close()
			producer, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
			if err == nil {
				producer.Close()
			}
			if got := err == nil; got != tc.want {
				t.Errorf("a producer on %s was admitted: %t, want %t (%v)", topic, got, tc.want, err)
			}
		})
	}
}
