package function

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/armadaproject/armada-crossplane/internal/harness/freeport"
)

// servedRounds is how many times BenchmarkServedMemory calls each Armada,
// in turn, as Crossplane calls every XR it reconciles.
const servedRounds = 10

// BenchmarkServedMemory measures function-armada as served: the real
// binary, built from functions/armada, with its own collector target
// (GOGC=400 unless the environment sets GOGC), called over loopback gRPC
// with the production example under 10, 50, 100 and 500 distinct names and
// UIDs, each called servedRounds times in turn. It reports the process's
// resident memory after the calls (rss-MB) and its high-water mark
// (hwm-MB), from /proc, and the median call's latency (p50-ms).
func BenchmarkServedMemory(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "function-armada")
	build := exec.CommandContext(b.Context(), "go", "build", "-o", bin, "../../functions/armada") //nolint:gosec // Builds the function from this repository.
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	for _, n := range []int{10, 50, 100, 500} {
		b.Run(fmt.Sprintf("armadas=%d", n), func(b *testing.B) {
			reqs := distinctRequests(b, n)
			for b.Loop() {
				rss, hwm, p50 := serve(b, bin, reqs)
				b.ReportMetric(rss, "rss-MB")
				b.ReportMetric(hwm, "hwm-MB")
				b.ReportMetric(p50, "p50-ms")
			}
		})
	}
}

// serve starts bin, calls it with every request servedRounds times in
// turn, and returns its resident memory and high-water mark in MB and the
// median call's latency in ms.
func serve(b *testing.B, bin string, reqs []*fnv1.RunFunctionRequest) (rss, hwm, p50 float64) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ports, err := freeport.Reserve(ctx, 2)
	if err != nil {
		b.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	cmd := exec.CommandContext(ctx, bin, "--insecure", "--address", addr, //nolint:gosec // The binary built above.
		"--metrics-address", fmt.Sprintf("127.0.0.1:%d", ports[1]))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close() //nolint:errcheck // Closing a client.
	client := fnv1.NewFunctionRunnerServiceClient(conn)
	lat := make([]time.Duration, 0, servedRounds*len(reqs))
	for round := range servedRounds {
		for _, r := range reqs {
			start := time.Now()
			rsp, err := client.RunFunction(ctx, r, grpc.WaitForReady(true), grpc.MaxCallRecvMsgSize(64<<20))
			if err != nil || len(rsp.GetResults()) > 0 {
				b.Fatalf("RunFunction(...): %v %v", err, rsp.GetResults())
			}
			if round > 0 { // The first round waits for the server to start.
				lat = append(lat, time.Since(start))
			}
		}
	}
	rss, hwm = procStatusMB(b, cmd.Process.Pid, "VmRSS:"), procStatusMB(b, cmd.Process.Pid, "VmHWM:")
	slices.Sort(lat)
	return rss, hwm, float64(lat[len(lat)/2]) / float64(time.Millisecond)
}

// procStatusMB reads a kB field of /proc/PID/status, in MB.
func procStatusMB(b *testing.B, pid int, field string) float64 {
	b.Helper()
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(string(st), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field {
			kb, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb / 1024
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
