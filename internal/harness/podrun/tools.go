package podrun

import (
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Ghostunnel is the TLS-terminating proxy binoculars' pod runs as
// sidecars when TLS is on (internal/armada/tlsproxy.go), built by `make
// ghostunnel` at the version the image's tag names.
const Ghostunnel = "ghostunnel"

// tools maps the third-party images the composed pods run beside Armada's
// and Pulsar's, by repository (any registry), to the binary each runs:
// the image's entrypoint, so a container's args are the binary's.
var tools = map[string]string{"ghostunnel/ghostunnel": Ghostunnel}

// ToolForImage returns the tool binary an image such as
// registry.example.com/ghostunnel/ghostunnel:v1.8.4 runs.
func ToolForImage(image string) (string, bool) {
	for repo, tool := range tools {
		if ImageIs(image, repo) {
			return tool, true
		}
	}
	return "", false
}

// ImageKind is what the runner makes of a container image.
type ImageKind int

const (
	// OtherImage is none of the kinds below: the runner cannot run it.
	OtherImage ImageKind = iota
	// ArmadaImage is one of Armada's components' (ComponentForImage).
	ArmadaImage
	// PulsarImage is Apache Pulsar's (apachepulsar/pulsar).
	PulsarImage
	// ToolImage is a pinned tool's (ToolForImage).
	ToolImage
)

// KindOfImage tells what an image reference, from any registry, is.
func KindOfImage(image string) ImageKind {
	if _, _, ok := ComponentForImage(image); ok {
		return ArmadaImage
	}
	if ImageIs(image, "apachepulsar/pulsar") {
		return PulsarImage
	}
	if _, ok := ToolForImage(image); ok {
		return ToolImage
	}
	return OtherImage
}

// ImageIs reports whether image is repository repo's (e.g.
// "apachepulsar/pulsar"), from any registry, at any tag or digest.
func ImageIs(image, repo string) bool {
	ref := imageRepo(image)
	return ref == repo || strings.HasSuffix(ref, "/"+repo)
}

// imageRepo is an image reference without its tag and digest.
func imageRepo(image string) string {
	ref, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[:i]
	}
	return ref
}

// MoveGhostunnelPorts rewrites ghostunnel's --listen and --target flags
// for processes that share one loopback: --listen=HOST:PORT listens on
// 127.0.0.1 at the port listen gives for PORT, --target=HOST:PORT dials
// 127.0.0.1 at the port target says the pod's PORT moved to. It returns
// the args and each listened port's local port.
func MoveGhostunnelPorts(args []string, listen func(port int32) (int, error), target func(port int32) (int, bool)) ([]string, map[int32]int, error) {
	out := make([]string, 0, len(args))
	listened := map[int32]int{}
	for _, a := range args {
		flag, addr, ok := strings.Cut(a, "=")
		if !ok || (flag != "--listen" && flag != "--target") {
			out = append(out, a)
			continue
		}
		i := strings.LastIndex(addr, ":")
		n, err := strconv.ParseInt(addr[i+1:], 10, 32)
		if i < 0 || err != nil {
			return nil, nil, errors.Errorf("ghostunnel %s %q is not HOST:PORT", flag, addr)
		}
		port := int32(n)
		var local int
		if flag == "--listen" {
			if local, err = listen(port); err != nil {
				return nil, nil, err
			}
			listened[port] = local
		} else if local, ok = target(port); !ok {
			return nil, nil, errors.Errorf("ghostunnel --target port %d is no port of the pod's other containers", port)
		}
		out = append(out, flag+"=127.0.0.1:"+strconv.Itoa(local))
	}
	return out, listened, nil
}
