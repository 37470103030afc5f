package conformance

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/armadaproject/armada-crossplane/internal/harness/podrun"
)

// These tests cover the helpers TestArmadaConformance relies on; they need
// no binaries or services.

func TestArmadaConfig(t *testing.T) {
	c := &armadaConfig{
		Base: map[string]any{
			"postgres": map[string]any{"connection": map[string]any{"host": "postgres", "password": "psw"}},
			"metrics":  map[string]any{"port": 9003},
		},
		Overrides: []map[string]any{{
			"metricsPort": 9000,
			"auth": map[string]any{"basicAuth": map[string]any{"users": map[string]any{
				"internal-server": map[string]any{"password": ""},
			}}},
			"scheduling": map[string]any{"supportedResourceTypes": map[string]any{"nvidia.com/gpu": map[string]any{"resolution": "1"}}},
		}},
	}
	t.Run("Lookup", func(t *testing.T) {
		cases := map[string]struct {
			key                string
			has, base, overide bool
		}{
			"BaseOnly":      {key: "postgres.connection.host", has: true, base: true},
			"OverrideOnly":  {key: "metricsPort", has: true, overide: true},
			"CaseFolded":    {key: "MetricsPort", has: true, overide: true},
			"StructPrefix":  {key: "Metrics.port", has: true, base: true},
			"DottedMapKey":  {key: "scheduling.supportedResourceTypes.nvidia.com/gpu.resolution", has: true, overide: true},
			"Hyphenated":    {key: "auth.basicAuth.users.internal-server.password", has: true, overide: true},
			"Absent":        {key: "redis.addrs"},
			"PartialPrefix": {key: "postgres.conn"},
		}
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				got := [3]bool{c.Has(tc.key), c.InBase(tc.key), c.InOverride(tc.key)}
				if diff := cmp.Diff([3]bool{tc.has, tc.base, tc.overide}, got); diff != "" {
					t.Errorf("Has, InBase, InOverride(%q): -want, +got:\n%s", tc.key, diff)
				}
			})
		}
	})
	t.Run("EnvNames", func(t *testing.T) {
		names := c.EnvNames()
		for _, n := range []string{
			"ARMADA_POSTGRES_CONNECTION_PASSWORD",
			"ARMADA_METRICSPORT",
			"ARMADA_AUTH_BASICAUTH_USERS_INTERNAL-SERVER_PASSWORD",
		} {
			if !names[n] {
				t.Errorf("EnvNames() lacks %s", n)
			}
		}
		for _, n := range []string{"ARMADA_POSTGRES_CONNECTION", "ARMADA_PULSAR_TOKEN"} {
			if names[n] {
				t.Errorf("EnvNames() has %s, which viper would not honour", n)
			}
		}
	})
}

func TestPortOverrides(t *testing.T) {
	c := &armadaConfig{
		Base:      map[string]any{"grpc": map[string]any{"port": 50052}, "http": map[string]any{"port": 8080}, "metricsPort": 0},
		Overrides: []map[string]any{{"grpc": map[string]any{"port": 50051}}},
	}
	next := 20000
	moved, env := portOverrides(c, func(string) int { next++; return next })
	wantMoved := map[string]int{"grpc.port": 20001, "http.port": 20002}
	if diff := cmp.Diff(wantMoved, moved); diff != "" {
		t.Errorf("portOverrides(...) moved: -want, +got:\n%s", diff)
	}
	wantEnv := []podrun.EnvVar{{Name: "ARMADA_GRPC_PORT", Value: "20001"}, {Name: "ARMADA_HTTP_PORT", Value: "20002"}}
	if diff := cmp.Diff(wantEnv, env); diff != "" {
		t.Errorf("portOverrides(...) env: -want, +got:\n%s", diff)
	}
}

func TestUnusedKeys(t *testing.T) {
	log := strings.Join([]string{
		"2026-11-29T15:54:37.067Z INFO startup.go:43 Read override config from [/tmp/lk.yaml]",
		"2026-11-29T15:54:37.068Z WARN startup.go:73 Unused keys: [foo Scheduling.maxjobschedulingcontextsperexecutor]",
		"2026-11-29T15:54:37.069Z INFO lifecycle.go:67 OpenTelemetry disabled by config",
	}, "\n")
	want := []string{"Scheduling.maxjobschedulingcontextsperexecutor", "foo"}
	if diff := cmp.Diff(want, unusedKeys(log)); diff != "" {
		t.Errorf("unusedKeys(...): -want, +got:\n%s", diff)
	}
}

func TestConfigErrorLine(t *testing.T) {
	cases := map[string]struct {
		line string
		want bool
	}{
		"Validation": {line: "ERROR startup.go:84 ConfigError: Field Postgres.Connection is required but was not found", want: true},
		"Decoding":   {line: "FATAL startup.go:63 decoding failed due to the following error(s):", want: true},
		"NoAuth":     {line: `ERROR main.go:134 Armada server shut down error="at least one auth method must be specified in config"`, want: true},
		"Panic":      {line: "panic: runtime error: invalid memory address", want: true},
		// The test serves the OIDC provider, so failing to reach it fails.
		"OIDCNetwork": {line: `ERROR server.go:33 Failed to create auth services error initialising openId auth: Get "https://id.example.com/realms/a/.well-known/openid-configuration": dial tcp`, want: true},
		"Pulsar":      {line: `WARN connection.go:283 Failed to connect to broker. error="dial tcp: lookup pulsar"`},
		"Unused":      {line: "WARN startup.go:73 Unused keys: [foo]"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := configErrorLine("INFO fine\n"+tc.line+"\nINFO fine") != ""
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("configErrorLine(%q): -want, +got:\n%s", tc.line, diff)
			}
		})
	}
}

func TestWiringErrors(t *testing.T) {
	mk := func(component, key, value string, job bool) *Run {
		return &Run{
			Job: job,
			Inv: &podrun.Invocation{Workload: "Deployment/" + component, Container: component, Component: component},
			Cfg: &armadaConfig{Base: map[string]any{}, Overrides: []map[string]any{{key: value}}},
		}
	}
	cases := map[string]struct {
		runs []*Run
		want []string
	}{
		"Agree": {runs: []*Run{
			mk("server", "eventsApiRedis.db", "2", false),
			mk("eventingester", "redis.db", "2", false),
		}},
		"Disagree": {
			runs: []*Run{
				mk("server", "eventsApiRedis.db", "1", false),
				mk("eventingester", "redis.db", "2", false),
			},
			want: []string{`components disagree on the Redis database: "1" from Deployment/server/server eventsApiRedis.db; "2" from Deployment/eventingester/eventingester redis.db`},
		},
		"JobsIgnored": {runs: []*Run{
			mk("server", "eventsApiRedis.db", "1", false),
			mk("eventingester", "redis.db", "2", true),
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, wiringErrors(tc.runs)); diff != "" {
				t.Errorf("wiringErrors(...): -want, +got:\n%s", diff)
			}
		})
	}
}

func TestSchedulerAuth(t *testing.T) {
	a := SchedulerAuth{
		Users: map[string]basicUser{
			"executor": {Password: "pw", Groups: []string{"armada-executors"}},
			"admin":    {Password: "adminpw", Groups: []string{"armada-admins"}},
		},
		ExecuteJobs: []string{"armada-executors"},
	}
	basic := func(s string) string { return "basic " + base64.StdEncoding.EncodeToString([]byte(s)) }
	cases := map[string]struct {
		header string
		grants []string
		want   codes.Code
	}{
		"Granted":         {header: basic("executor:pw"), want: codes.OK},
		"SchemeCaseFolds": {header: "Basic " + base64.StdEncoding.EncodeToString([]byte("executor:pw")), want: codes.OK},
		"NoHeader":        {want: codes.Unauthenticated},
		"Bearer":          {header: "Bearer token", want: codes.Unauthenticated},
		"NotBase64":       {header: "basic !!", want: codes.Unauthenticated},
		"WrongPassword":   {header: basic("executor:nope"), want: codes.Unauthenticated},
		"UnknownUser":     {header: basic("nobody:pw"), want: codes.Unauthenticated},
		"NoGrant":         {header: basic("admin:adminpw"), want: codes.PermissionDenied},
		"EveryoneGranted": {header: basic("admin:adminpw"), grants: []string{EveryoneGroup}, want: codes.OK},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := a
			if tc.grants != nil {
				a.ExecuteJobs = tc.grants
			}
			md := metadata.MD{}
			if tc.header != "" {
				md.Set("authorization", tc.header)
			}
			p, err := a.authenticate(metadata.NewIncomingContext(context.Background(), md))
			if err == nil {
				err = a.authorize(p)
			}
			if diff := cmp.Diff(tc.want, status.Code(err)); diff != "" {
				t.Errorf("authenticate, authorize(%q): -want, +got code:\n%s (%v)", tc.header, diff, err)
			}
		})
	}
}
