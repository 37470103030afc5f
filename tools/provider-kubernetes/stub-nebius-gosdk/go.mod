// Module gosdk is a local stand-in for github.com/nebius/gosdk v0.2.28, which
// the Go module proxy does not serve. provider-kubernetes uses it only for
// Nebius IAM authentication, so this stub declares just the identifiers it
// references and fails at run time.
module github.com/nebius/gosdk

go 1.26.0
