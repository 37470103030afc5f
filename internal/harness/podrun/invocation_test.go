package podrun

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestComponentForImage(t *testing.T) {
	type want struct {
		component, tag string
		ok             bool
	}
	cases := map[string]struct {
		image string
		want  want
	}{
		"DockerHub":          {image: "gresearch/armada-server:0.22.7", want: want{"server", "0.22.7", true}},
		"RegistryWithPort":   {image: "registry.example.com:5000/mirror/gresearch/armada-scheduler-ingester:0.22.6", want: want{"scheduleringester", "0.22.6", true}},
		"Digest":             {image: "gresearch/armada-lookout-ingester:0.22.7@sha256:abc", want: want{"lookoutingester", "0.22.7", true}},
		"NoTag":              {image: "gresearch/armada-event-ingester", want: want{"eventingester", "", true}},
		"Executor":           {image: "gresearch/armada-executor:latest", want: want{"executor", "latest", true}},
		"NotArmada":          {image: "postgres:15.2-alpine", want: want{tag: "15.2-alpine"}},
		"ArmadactlNotServed": {image: "gresearch/armadactl:0.22.7", want: want{tag: "0.22.7"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, tag, ok := ComponentForImage(tc.image)
			if diff := cmp.Diff(tc.want, want{c, tag, ok}, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("ComponentForImage(%q): -want, +got:\n%s", tc.image, diff)
			}
		})
	}
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "x", "B_2": "y"}
	cases := map[string]struct {
		in, want string
	}{
		"Defined":   {in: "--a=$(A)/$(B_2)", want: "--a=x/y"},
		"Undefined": {in: "$(NOPE)", want: "$(NOPE)"},
		"Escaped":   {in: "$$(A) $$", want: "$(A) $"},
		"Plain":     {in: "$A ${A}", want: "$A ${A}"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Expand(tc.in, vars)); diff != "" {
				t.Errorf("Expand(%q): -want, +got:\n%s", tc.in, diff)
			}
		})
	}
}

func TestConfigFlags(t *testing.T) {
	cases := map[string]struct {
		args []string
		want []string
	}{
		"Separate":   {args: []string{"run", "--config", "/config/a.yaml", "--timeout", "5m"}, want: []string{"/config/a.yaml"}},
		"Equals":     {args: []string{"--config=/a.yaml"}, want: []string{"/a.yaml"}},
		"Repeated":   {args: []string{"--config", "/a.yaml", "--config=/b.yaml"}, want: []string{"/a.yaml", "/b.yaml"}},
		"CommaList":  {args: []string{"--config", "/a.yaml,/b.yaml"}, want: []string{"/a.yaml", "/b.yaml"}},
		"NoConfig":   {args: []string{"--migrateDatabase"}},
		"FlagAtLast": {args: []string{"--config"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ConfigFlags(tc.args)); diff != "" {
				t.Errorf("ConfigFlags(%q): -want, +got:\n%s", tc.args, diff)
			}
		})
	}
}

func TestRewriter(t *testing.T) {
	rw := NewRewriter(map[string]string{
		"/config":        "/tmp/x/volumes/config",
		"/config/nested": "/tmp/x/volumes/nested",
		"/tmp":           "/tmp/x/volumes/tmp",
		"/pulsar/tokens": "/tmp/x/volumes/pulsar-token",
	})
	cases := map[string]struct {
		in, want string
	}{
		"Arg":             {in: "/config/config.yaml", want: "/tmp/x/volumes/config/config.yaml"},
		"Longest":         {in: "/config/nested/a", want: "/tmp/x/volumes/nested/a"},
		"Exact":           {in: "/config", want: "/tmp/x/volumes/config"},
		"FlagValue":       {in: "--config=/config/c.yaml", want: "--config=/tmp/x/volumes/config/c.yaml"},
		"YAMLValue":       {in: "jwtTokenPath: /pulsar/tokens/TOKEN\n", want: "jwtTokenPath: /tmp/x/volumes/pulsar-token/TOKEN\n"},
		"CommaList":       {in: "/config/a,/config/b", want: "/tmp/x/volumes/config/a,/tmp/x/volumes/config/b"},
		"NotInsideURL":    {in: "http://host/config/x", want: "http://host/config/x"},
		"NotPrefixOfName": {in: "/configs/x /tmpfoo", want: "/configs/x /tmpfoo"},
		"NoRewriteTwice":  {in: "/config", want: "/tmp/x/volumes/config"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, rw.Rewrite(tc.in)); diff != "" {
				t.Errorf("Rewrite(%q): -want, +got:\n%s", tc.in, diff)
			}
		})
	}
}

func TestResourceField(t *testing.T) {
	c := corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourceCPU: resource.MustParse("300m")},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")},
	}}
	cases := map[string]struct {
		ref     corev1.ResourceFieldSelector
		want    string
		wantErr bool
	}{
		"MemoryBytes":  {ref: corev1.ResourceFieldSelector{Resource: "limits.memory"}, want: "1073741824"},
		"MemoryMi":     {ref: corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}, want: "1024"},
		"CPURoundedUp": {ref: corev1.ResourceFieldSelector{Resource: "limits.cpu"}, want: "1"},
		"CPUMilli":     {ref: corev1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: resource.MustParse("1m")}, want: "200"},
		"Missing":      {ref: corev1.ResourceFieldSelector{Resource: "requests.memory"}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := resourceField(&tc.ref, c)
			if (err != nil) != tc.wantErr {
				t.Fatalf("resourceField(%s): error %v, want error: %t", tc.ref.Resource, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("resourceField(%s): -want, +got:\n%s", tc.ref.Resource, diff)
			}
		})
	}
}
