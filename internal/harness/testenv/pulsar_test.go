package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// TestPulsar starts a broker, creates a tenant, a namespace and a
// partitioned topic with its pulsar-admin, as the composed topic-init Job
// does, and sends one message through the topic with the Go client
// Armada uses.
func TestPulsar(t *testing.T) {
	p := StartPulsar(t)

	const (
		tenant    = "armada"
		namespace = "armada/armada"
		topic     = "persistent://armada/armada/events"
	)
	admin := func(t *testing.T, args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(t.Context(), p.AdminToolPath(), args...).Output()
		if err != nil {
			var stderr []byte
			if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
				stderr = ee.Stderr
			}
			t.Fatalf("pulsar-admin %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
		return strings.TrimSpace(string(out))
	}

	// The Job's script reads the cluster from `clusters list` and passes
	// --admin-url; the wrapper's own client.conf must agree with it.
	admin(t, "--admin-url", p.AdminURL(), "tenants", "create", tenant, "--allowed-clusters", admin(t, "clusters", "list"))
	admin(t, "namespaces", "create", namespace)
	admin(t, "topics", "create-partitioned-topic", topic, "--partitions", "2")

	cases := map[string]struct {
		reason string
		args   []string
		want   string
	}{
		"Cluster": {
			reason: "Standalone creates one cluster, standalone, which the Job's script picks.",
			args:   []string{"clusters", "list"},
			want:   "standalone",
		},
		"Namespaces": {
			reason: "The namespace created through the wrapper exists.",
			args:   []string{"namespaces", "list", tenant},
			want:   namespace,
		},
		"Topic": {
			reason: "The partitioned topic exists with its two partitions.",
			args:   []string{"topics", "list-partitioned-topics", namespace},
			want:   topic,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, admin(t, tc.args...)); diff != "" {
				t.Errorf("%s\npulsar-admin %s: -want, +got:\n%s", tc.reason, strings.Join(tc.args, " "), diff)
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
	tokenArgs := func(token string) []string {
		return []string{"--auth-plugin", "org.apache.pulsar.client.impl.auth.AuthenticationToken", "--auth-params", "token:" + token}
	}
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
			args := []string{"clusters", "list"}
			if tc.token != "" {
				args = append(tokenArgs(tc.token), args...)
			}
			out, err := exec.CommandContext(t.Context(), p.AdminToolPath(), args...).CombinedOutput()
			if got := err == nil; got != tc.want {
				t.Errorf("%s\npulsar-admin clusters list succeeded: %t, want %t; output:\n%s", tc.reason, got, tc.want, out)
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

// TestPulsarAdminArchive dumps pulsar-admin's class-data archive (or finds
// the one already in the tool cache) and checks that a pulsar-admin run
// with the flags the wrapper script passes loads its classes from it.
func TestPulsarAdminArchive(t *testing.T) {
	paths := pulsarJars(t)
	archive, err := pulsarAdminArchive(t.Context(), paths)
	if err != nil {
		t.Fatal(err)
	}
	again, err := pulsarAdminArchive(t.Context(), paths)
	if err != nil || again != archive {
		t.Fatalf("a second call returned %q, %v; want the same archive %q", again, err, archive)
	}
	conf := filepath.Join(t.TempDir(), "client.conf")
	if err := os.WriteFile(conf, []byte("webServiceUrl=http://127.0.0.1:1/\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-XX:SharedArchiveFile=" + archive}, pulsarAdminArchiveFlags...)
	args = append(args, pulsarAdminJVMFlags...)
	args = append(args, "-Xlog:class+load=info", "-cp", filepath.Join(paths.adminLib, "*"), pulsarAdminMain, conf, "clusters", "list")
	out, _ := exec.CommandContext(t.Context(), paths.java, args...).CombinedOutput() // It fails: no broker.
	shared, loaded := strings.Count(string(out), "source: shared objects file (top)"), strings.Count(string(out), "source: file:"+paths.adminLib)
	// About 5,400 classes come from the archive and under 200 from the jars.
	if shared == 0 || shared < 10*loaded {
		t.Errorf("pulsar-admin loaded %d classes from the archive %s and %d from its jars; want most from the archive", shared, archive, loaded)
	}
}
