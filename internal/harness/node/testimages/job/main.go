// Command job is the real node's job image: it checks what its arguments
// ask about the container it runs in, optionally serves a readiness
// endpoint, sleeps for a duration and exits with a chosen code. A failed
// check exits with its own code instead, so the exit code the kubelet
// reports says which check failed:
//
//	-expect-file PATH (repeatable)  exit 90 if PATH is missing or empty
//	-expect-readonly-root           exit 91 if / is writable
//	-expect-uid N                   exit 92 if the process's uid is not N
//	-listen ADDR                    serve 200 at /ready (exit 93 if it cannot listen)
//	-sleep DURATION, -exit CODE     then sleep and exit with CODE
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"
)

// files collects the repeated -expect-file flags.
type files []string

func (f *files) String() string     { return strings.Join(*f, ",") }
func (f *files) Set(v string) error { *f = append(*f, v); return nil }

func main() {
	var expect files
	flag.Var(&expect, "expect-file", "a file that must exist and not be empty (repeatable)")
	readOnly := flag.Bool("expect-readonly-root", false, "fail unless / is read-only")
	uid := flag.Int("expect-uid", -1, "fail unless the process runs as this uid")
	listen := flag.String("listen", "", "serve 200 at /ready on this address")
	sleep := flag.Duration("sleep", 0, "how long to run")
	code := flag.Int("exit", 0, "the exit code")
	flag.Parse()

	for _, p := range expect {
		b, err := os.ReadFile(p) //nolint:gosec // The file the test names.
		if err != nil || len(b) == 0 {
			sayf("expect-file %s: missing or empty (%v)", p, err)
			os.Exit(90)
		}
		sayf("expect-file %s: %d bytes", p, len(b))
	}
	if *readOnly {
		err := os.WriteFile("/probe-readonly", []byte("x"), 0o600)
		if !errors.Is(err, syscall.EROFS) {
			sayf("expect-readonly-root: writing / gave %v, not EROFS", err)
			os.Exit(91)
		}
		sayf("expect-readonly-root: / is read-only")
	}
	if *uid >= 0 && os.Getuid() != *uid {
		sayf("expect-uid: running as %d, not %d", os.Getuid(), *uid)
		os.Exit(92)
	}
	if *listen != "" {
		l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", *listen)
		if err != nil {
			sayf("listen %s: %v", *listen, err)
			os.Exit(93)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/ready", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
		go func() { _ = (&http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}).Serve(l) }()
		sayf("serving /ready on %s", l.Addr())
	}
	time.Sleep(*sleep)
	sayf("exiting with %d", *code)
	os.Exit(*code)
}

// sayf prints one line of the job's output.
func sayf(format string, args ...any) { _, _ = fmt.Fprintf(os.Stdout, format+"\n", args...) }
