package function

import (
	"os"
	"runtime/debug"
)

// GCPercent is the garbage collector's target percentage the function
// serves with when the GOGC environment variable sets none.
//
// A reconcile of the production example allocates about 1.1 MB and keeps
// none of it, against a live heap of about 4 MB. At Go's default of 100
// the collector then runs every three or four reconciles, and marking the
// live heap each time costs about as much CPU as a fifth of RunFunction.
// At 400 it runs a quarter as often; the heap peaks at up to five times
// the live heap instead of twice (see "Performance" in the README for
// both, measured). GOGC, and GOMEMLIMIT for a pod with a memory limit,
// set in the function's DeploymentRuntimeConfig override it.
const GCPercent = 400

// SetGCPercent sets the garbage collector's target to GCPercent unless
// the GOGC environment variable sets one, and returns the target in
// effect (-1 for GOGC=off).
func SetGCPercent() int {
	if _, ok := os.LookupEnv("GOGC"); ok {
		p := debug.SetGCPercent(100)
		debug.SetGCPercent(p)
		return p
	}
	debug.SetGCPercent(GCPercent)
	return GCPercent
}
