//go:build tools

// Package tools pins versitygw v1.8.0 (Apache-2.0), built by build.sh: a
// real S3 gateway over a directory, the object store the backup round trip
// (test/backups) archives to with Barman Cloud. To refresh go.mod and
// go.sum, run `go get github.com/versity/versitygw/cmd/versitygw@v1.8.0`.
package tools

import (
	_ "github.com/versity/versitygw/cmd/versitygw"
)
