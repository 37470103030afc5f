package conformance

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNotRunReason(t *testing.T) {
	cases := map[string]struct {
		image string
		known bool
	}{
		"Name":           {image: "library/redis", known: true},
		"RegistryAndTag": {image: "docker.io/library/redis:7.2", known: true},
		"PortAndDigest":  {image: "registry:5000/library/redis:7@sha256:abc", known: true},
		"PortNoTag":      {image: "registry:5000/library/redis", known: true},
		"OtherImage":     {image: "docker.io/library/postgres:16"},
		"SuffixOnly":     {image: "docker.io/mylibrary/redis:7"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, known := notRunReason(tc.image)
			if diff := cmp.Diff(tc.known, known); diff != "" {
				t.Errorf("notRunReason(%q) known: -want, +got:\n%s", tc.image, diff)
			}
		})
	}
}
