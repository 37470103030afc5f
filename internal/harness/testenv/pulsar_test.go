package testenv

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"
)

// rest makes c and returns the answer's status code and trimmed body,
// failing the test if no answer came.
func rest(t *testing.T, p *Pulsar, c AdminCall) (int, string) {
	t.Helper()
	code, body, err := p.Call(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	return code, strings.TrimSpace(body)
}

// TestPulsar starts a broker, creates a tenant, a namespace and a
// partitioned topic through its admin REST API, as the composed topic-init
// Job does, and sends one message through the topic with the Go client
// Armada uses.
func TestPulsar(t *testing.T) {
	p := StartPulsar(t)

	const (
		tenant    = "armada"
		namespace = "armada/armada"
		topic     = "persistent://armada/armada/events"
	)
	for _, c := range [][3]string{
		{http.MethodPut, "/admin/v2/tenants/" + tenant, `{"allowedClusters":["standalone"]}`},
		{http.MethodPut, "/admin/v2/namespaces/" + namespace, ""},
		{http.MethodPut, "/admin/v2/persistent/armada/armada/events/partitions", "2"},
	} {
		if code, body := rest(t, p, AdminCall{Method: c[0], Path: c[1], Body: c[2]}); code != http.StatusNoContent {
			t.Fatalf("%s %s: %d %s, want 204", c[0], c[1], code, body)
		}
	}

	cases := map[string]struct {
		reason string
		path   string
		want   string
	}{
		"Cluster": {
			reason: "Standalone creates one cluster, standalone, which the Job's script picks.",
			path:   "/admin/v2/clusters",
			want:   `["standalone"]`,
		},
		"Namespaces": {
			reason: "The namespace created exists.",
			path:   "/admin/v2/namespaces/" + tenant,
			want:   `"` + namespace + `"`,
		},
		"Topic": {
			reason: "The partitioned topic exists with its two partitions.",
			path:   "/admin/v2/persistent/armada/armada/events/partitions",
			want:   `"partitions":2`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			code, body := rest(t, p, AdminCall{Method: http.MethodGet, Path: tc.path})
			if code != http.StatusOK || !strings.Contains(body, tc.want) {
				t.Errorf("%s\nGET %s: %d %s, want 200 with %s", tc.reason, tc.path, code, body, tc.want)
			}
		})
	}

	t.Run("Message", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		client, err := pulsar.NewClient(pulsar.ClientOptions{URL: p.ServiceURL(), OperationTimeout: 30 * time.Second})
		if err != nil {
			t.Fatalf("cannot create a Pulsar client: %v", err)
		}
		defer client.Close()
		consumer, err := client.Subscribe(pulsar.ConsumerOptions{
			Topic: topic, SubscriptionName: "test", Type: pulsar.KeyShared,
			SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest,
		})
		if err != nil {
			t.Fatalf("cannot subscribe to %s: %v", topic, err)
		}
		defer consumer.Close()
		producer, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
		if err != nil {
			t.Fatalf("cannot create a producer on %s: %v", topic, err)
		}
		defer producer.Close()
		if _, err := producer.Send(ctx, &pulsar.ProducerMessage{Key: "job-set", Payload: []byte("hello")}); err != nil {
			t.Fatalf("cannot send to %s: %v", topic, err)
		}
		msg, err := consumer.Receive(ctx)
		if err != nil {
			t.Fatalf("cannot receive from %s: %v\nbroker log:\n%s", topic, err, p.Log())
		}
		if err := consumer.Ack(msg); err != nil {
			t.Errorf("cannot acknowledge: %v", err)
		}
		type message struct{ Key, Payload string }
		if diff := cmp.Diff(message{"job-set", "hello"}, message{msg.Key(), string(msg.Payload())}); diff != "" {
			t.Errorf("received: -want, +got:\n%s", diff)
		}
	})
}

// TestPulsarTokenAuth shows a broker with TokenAuth admits a client with a
// token it signed and refuses one without a token or with a token signed
// by another key, on the admin API (the topic-init Job's path) and the
// binary protocol (the components' path).
func TestPulsarTokenAuth(t *testing.T) {
	p := StartPulsarWithOptions(t, PulsarOptions{TokenAuth: true})
	other := &Pulsar{tokenKey: []byte("another key, another broker, 32b")}
	cases := map[string]struct {
		reason string
		token  string
		want   bool
	}{
		"Signed":   {reason: "A token the broker signed is accepted.", token: p.Token("armada"), want: true},
		"NoToken":  {reason: "Without a token the broker refuses the client.", want: false},
		"Unsigned": {reason: "A token signed by another key is refused.", token: other.Token("armada"), want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			code, body := rest(t, p, AdminCall{Method: http.MethodGet, Path: "/admin/v2/clusters", Token: tc.token})
			if got := code == http.StatusOK; got != tc.want {
				t.Errorf("%s\nGET /admin/v2/clusters succeeded: %t (%d %s), want %t", tc.reason, got, code, body, tc.want)
			}

			opts := pulsar.ClientOptions{URL: p.ServiceURL(), OperationTimeout: 20 * time.Second, ConnectionTimeout: 10 * time.Second}
			if tc.token != "" {
				opts.Authentication = pulsar.NewAuthenticationToken(tc.token)
			}
			client, err := pulsar.NewClient(opts)
			if err != nil {
				t.Fatalf("cannot create a Pulsar client: %v", err)
			}
			defer client.Close()
			producer, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/default/auth"})
			if err == nil {
				producer.Close()
			}
			if got := err == nil; got != tc.want {
				t.Errorf("%s\ncreating a producer succeeded: %t, want %t (%v)", tc.reason, got, tc.want, err)
			}
		})
	}
}
