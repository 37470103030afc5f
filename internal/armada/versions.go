package armada

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// A Release is one supported Armada release: a row of the version table.
// Everything the function renders differently per release, and every fact
// about a release the tests check, is a field here or generated from the
// row (the config keys each component reads, configkeys/v<version>.json,
// make generate), so supporting a new release is adding its row (see
// docs/dev/releasing.md).
//
// Every release's images are gresearch/armada-<component>:<Version>, and
// every release's migrations run the same way (components.go): a new
// release gets new migration Jobs because their names carry the version.
type Release struct {
	// Version is the release, x.y.z, and every Armada image's tag.
	Version string
	// Schema is the schema version each of Armada's databases is at once
	// this release's migration Job has run: the id of the newest migration
	// file its binary embeds (Armada records it in the database_version
	// sequence). TestReleaseFacts checks it against Armada's source and
	// test/conformance's upgrade test against a migrated database.
	Schema map[string]int
}

// Releases is the version table, oldest first. The newest is the default
// for new claims. The XRD's enum on spec.version is generated from it
// (make generate), and `make armada-bins` builds each release's binaries.
var Releases = []Release{
	{
		Version: "0.22.6",
		Schema:  map[string]int{dbScheduler: 40, dbLookout: 35},
	},
	{
		// Adds scheduling.pools[].jobDefaults (its config keys,
		// configkeys/v0.22.7.json, have them; 0.22.6's do not).
		Version: "0.22.7",
		Schema:  map[string]int{dbScheduler: 40, dbLookout: 35},
	},
	{
		// Adds scheduler migration 041_add_requestor.sql (jobs.reprioritise_user,
		// runs.preempt_user). Lookout's built-in config changes only its
		// default uiConfig.commandSpecs (the Exec template gains "--"), a
		// key the function does not render; no rendered key changes.
		Version: "0.22.8",
		Schema:  map[string]int{dbScheduler: 41, dbLookout: 35},
	},
}

// PulsarVersion is the Apache Pulsar release the project composes and
// tests, one row for every use: the in-cluster chart's image tag
// (defaultPulsarImageTag), the topic-init Job's image
// (apachepulsar/pulsar:<PulsarVersion>), and the standalone broker the
// tests run (tools/pulsar, `make pulsar`, testenv.StartPulsar), which `go
// run ./internal/build/cmd/armadaversions -pulsar` hands to the build. It
// is the Pulsar 4.0 LTS line, as the chart's appVersion (4.0.9), at the
// newest 4.0.x whose broker Maven Central serves with every dependency:
// 4.0.8's and 4.0.9's closures lack jetcd-core-shaded and
// pulsar-opentelemetry there.
const PulsarVersion = "4.0.7"

// SupportedVersions are the versions of Releases, oldest first.
var SupportedVersions = func() []string {
	out := make([]string, 0, len(Releases))
	for _, r := range Releases {
		out = append(out, r.Version)
	}
	return out
}()

// DefaultVersion is the newest supported Armada release.
var DefaultVersion = Releases[len(Releases)-1].Version

// ReleaseOf returns the row of a supported version.
func ReleaseOf(version string) (Release, bool) {
	i := slices.IndexFunc(Releases, func(r Release) bool { return r.Version == version })
	if i < 0 {
		return Release{}, false
	}
	return Releases[i], true
}

// compareVersions compares two x.y.z versions like strings.Compare.
// Malformed parts compare as zero.
func compareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range 3 {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

// checkDowngrade refuses to render an older version than a running one.
func checkDowngrade(in *Install, o Observed) error {
	names := make([]string, 0, len(o.Workloads))
	for name := range o.Workloads {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if v := o.Workloads[name].Version; v != "" && compareVersions(in.Spec.Version, v) < 0 {
			return errors.Errorf("spec.version: Forbidden: cannot downgrade Armada from %s to %s (%s runs %s); set spec.version to %s or newer",
				v, in.Spec.Version, name, v, v)
		}
	}
	return nil
}
