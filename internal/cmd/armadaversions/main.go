// Command armadaversions prints the Armada releases of the function's
// version table (internal/armada.Releases), oldest first, as module
// versions: what `make armada-bins` builds binaries for.
package main

import (
	"fmt"
	"strings"

	"github.com/armadaproject/armada-crossplane/internal/armada"
)

func main() {
	vs := make([]string, 0, len(armada.SupportedVersions))
	for _, v := range armada.SupportedVersions {
		vs = append(vs, "v"+v)
	}
	fmt.Println(strings.Join(vs, " "))
}
