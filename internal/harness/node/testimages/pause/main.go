// Command pause is the real node's pod sandbox process (its pause image):
// it holds the pod's namespaces open, doing nothing, until SIGTERM or
// SIGINT ends it.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	<-ch
}
