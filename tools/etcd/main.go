// Command etcd is etcd v3.7.4, built from this wrapper module so the local
// control plane (internal/harness/controlplane) runs a pinned etcd without Docker.
// The root module go.etcd.io/etcd/v3 has replace directives and cannot be
// installed with `go install`.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
