// Package scripts tests the shell scripts under tools/ that every build
// runs through (tools/progress.sh).
package scripts
