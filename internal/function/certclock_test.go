package function

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane/function-sdk-go/logging"
)

// TestCertClock proves the function hands its certificate clock to the
// render: the serving certificates' expiry in status.tls follows the
// window the clock is in, and without a clock they last as long as the
// CA.
func TestCertClock(t *testing.T) {
	created := time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)
	xr := strings.Replace(validXR, `"metadata": {"name": "armada-x1",`, `"metadata": {"name": "armada-x1", "creationTimestamp": "2026-03-04T00:00:00Z",`, 1)
	year := 365 * 24 * time.Hour
	cases := map[string]struct {
		reason string
		clock  func() time.Time
		want   map[string]any
	}{
		"FirstWindow": {
			reason: "A month after creation the first window's certificate lasts a year from creation.",
			clock:  func() time.Time { return created.Add(30 * 24 * time.Hour) },
			want:   map[string]any{"notAfter": created.Add(year).Format(time.RFC3339), "caNotAfter": created.Add(10 * year).Format(time.RFC3339)},
		},
		"SecondWindow": {
			reason: "Past two thirds of a year the second window's certificate is issued.",
			clock:  func() time.Time { return created.Add(300 * 24 * time.Hour) },
			want:   map[string]any{"notAfter": created.Add(year * 2 / 3).Add(year).Format(time.RFC3339), "caNotAfter": created.Add(10 * year).Format(time.RFC3339)},
		},
		"NoClock": {
			reason: "Without a clock serving certificates last as long as the CA.",
			want:   map[string]any{"notAfter": created.Add(10 * year).Format(time.RFC3339), "caNotAfter": created.Add(10 * year).Format(time.RFC3339)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f, err := New(logging.NewNopLogger(), WithPasswordKey([]byte("test")), WithCertClock(tc.clock))
			if err != nil {
				t.Fatal(err)
			}
			rsp, err := runFunction(t, f, requestFor(xr))
			if err != nil {
				t.Fatal(err)
			}
			status, _ := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)
			got, _ := status["tls"].(map[string]any)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nstatus.tls (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
