// Command armadaversions prints the Armada releases of the function's
// version table (internal/armada.Releases), oldest first, as module
// versions: what `make armada-bins` builds binaries for. With -pulsar it
// prints the Apache Pulsar broker release instead
// (internal/armada.PulsarVersion): what `make pulsar` assembles. With
// -default it prints the release a claim without spec.version runs
// (internal/armada.DefaultVersion): what `make run-bins` builds for make
// run's demo job.
package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/armadaproject/armada-crossplane/internal/armada"
)

func main() {
	pulsar := flag.Bool("pulsar", false, "print the Pulsar broker release (tools/pulsar/build.sh's argument)")
	def := flag.Bool("default", false, "print only the default release (tools/armada/build.sh's argument for make run's demo job)")
	flag.Parse()
	if *def {
		fmt.Println("v" + armada.DefaultVersion)
		return
	}
	if *pulsar {
		fmt.Println(armada.PulsarVersion)
		return
	}
	vs := make([]string, 0, len(armada.SupportedVersions))
	for _, v := range armada.SupportedVersions {
		vs = append(vs, "v"+v)
	}
	fmt.Println(strings.Join(vs, " "))
}
