// Package cli is the one exit path of the project's dev commands
// (internal/build/cmd/<name>): each main parses its flags with the standard
// flag package and hands its run function to Main.
package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// Main calls run with a context cancelled on SIGINT or SIGTERM. If run fails
// it prints "name: error" on stderr and exits 1.
func Main(name string, run func(context.Context) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}
