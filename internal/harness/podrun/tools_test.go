package podrun

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestToolForImage(t *testing.T) {
	type want struct {
		Tool string
		OK   bool
	}
	cases := map[string]struct {
		image string
		want  want
	}{
		"DockerHub":        {image: "ghostunnel/ghostunnel:v1.8.4", want: want{Ghostunnel, true}},
		"RegistryWithPort": {image: "registry.example.com:5000/ghostunnel/ghostunnel:v1.8.4", want: want{Ghostunnel, true}},
		"Digest":           {image: "ghostunnel/ghostunnel:v1.8.4@sha256:abc", want: want{Ghostunnel, true}},
		"OtherImage":       {image: "example.com/notghostunnel/ghostunnel:v1.8.4"},
		"Armada":           {image: "gresearch/armada-binoculars:0.22.8"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tool, ok := ToolForImage(tc.image)
			if diff := cmp.Diff(tc.want, want{tool, ok}); diff != "" {
				t.Errorf("ToolForImage(%q): -want, +got:\n%s", tc.image, diff)
			}
		})
	}
}

func TestKindOfImage(t *testing.T) {
	cases := map[string]struct {
		image string
		want  ImageKind
	}{
		"Armada":          {image: "registry.example.com:5000/gresearch/armada-server:0.22.7", want: ArmadaImage},
		"Pulsar":          {image: "apachepulsar/pulsar:4.0.7", want: PulsarImage},
		"PulsarMirrored":  {image: "registry.example.com/apachepulsar/pulsar:4.0.7@sha256:abc", want: PulsarImage},
		"NotPulsar":       {image: "example.com/notapachepulsar/pulsar:4.0.7", want: OtherImage},
		"Tool":            {image: "ghostunnel/ghostunnel:v1.8.4", want: ToolImage},
		"Redis":           {image: "docker.io/library/redis:7.4", want: OtherImage},
		"ArmadactlNotRun": {image: "gresearch/armadactl:0.22.7", want: OtherImage},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, KindOfImage(tc.image)); diff != "" {
				t.Errorf("KindOfImage(%q): -want, +got:\n%s", tc.image, diff)
			}
		})
	}
}

func TestMoveGhostunnelPorts(t *testing.T) {
	listen := func(port int32) (int, error) { return int(port) + 10000, nil }
	pod := map[int32]int{8081: 20001}
	target := func(port int32) (int, bool) { p, ok := pod[port]; return p, ok }
	type want struct {
		Args     []string
		Listened map[int32]int
		Err      bool
	}
	cases := map[string]struct {
		args []string
		want want
	}{
		"Moved": {
			args: []string{"server", "--listen=0.0.0.0:8080", "--target=127.0.0.1:8081", "--cert=/etc/armada/tls/tls.crt"},
			want: want{
				Args:     []string{"server", "--listen=127.0.0.1:18080", "--target=127.0.0.1:20001", "--cert=/etc/armada/tls/tls.crt"},
				Listened: map[int32]int{8080: 18080},
			},
		},
		"UnknownTarget": {
			args: []string{"server", "--listen=0.0.0.0:8080", "--target=127.0.0.1:9999"},
			want: want{Err: true},
		},
		"NotHostPort": {
			args: []string{"server", "--listen=unix:/tmp/sock"},
			want: want{Err: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			args, listened, err := MoveGhostunnelPorts(tc.args, listen, target)
			if diff := cmp.Diff(tc.want, want{args, listened, err != nil}); diff != "" {
				t.Errorf("MoveGhostunnelPorts(%q): -want, +got:\n%s", tc.args, diff)
			}
		})
	}
}
