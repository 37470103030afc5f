package armada

import (
	"crypto/x509"
	"slices"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// Lifetimes of the generated TLS material (tls.go), and when it is
// renewed. Time is cut into windows counted from the XR's creation: the
// certificate wanted at a moment is that of the window the moment is in,
// so the same XR, key and window give byte-identical certificates, and
// the clock (Options.Now) only picks the window; nothing here reads it.
//
// A serving certificate lasts a year; a new window starts every two
// thirds of that, so a certificate is renewed with a third of its life
// (four months) left and a fresh one always has at least that much. The
// CA lasts ten years and is replaced every five, so every serving
// certificate it signs expires before it does.
const (
	tlsLeafValidity = 365 * 24 * time.Hour
	tlsLeafStep     = tlsLeafValidity * 2 / 3
	tlsCAValidity   = 10 * 365 * 24 * time.Hour
	tlsCAStep       = tlsCAValidity / 2
)

// A tlsClock places generated certificates in time.
type tlsClock struct {
	// created is where windows are counted from: the XR's creation, or
	// tlsEpoch for a manifest never created.
	created time.Time
	// now is Options.Now, or created without a clock.
	now time.Time
	// clockless renders (a manifest rendered offline) cannot know the
	// date: their serving certificates last as long as the CA.
	clockless bool
}

func newTLSClock(created, now time.Time) tlsClock {
	if created.IsZero() {
		created = tlsEpoch
	}
	c := tlsClock{created: created.UTC(), now: now.UTC()}
	if now.IsZero() {
		c.now, c.clockless = c.created, true
	}
	return c
}

// window is the index, start and end of the window of the given step and
// validity that now is in (the first, before created).
func (c tlsClock) window(step, validity time.Duration) (int64, time.Time, time.Time) {
	var k int64
	if c.now.After(c.created) {
		k = int64(c.now.Sub(c.created) / step)
	}
	nb := c.created.Add(time.Duration(k) * step)
	return k, nb, nb.Add(validity)
}

// caWindow is the CA's window.
func (c tlsClock) caWindow() (int64, time.Time, time.Time) {
	return c.window(tlsCAStep, tlsCAValidity)
}

// leafWindow is the serving certificates' window; without a clock, the
// CA's.
func (c tlsClock) leafWindow() (int64, time.Time, time.Time) {
	if c.clockless {
		_, nb, na := c.caWindow()
		return 0, nb, na
	}
	return c.window(tlsLeafStep, tlsLeafValidity)
}

// fresh says whether an observed certificate may be kept: valid now, and
// not yet at its renewal point (less than validity-step of its life
// left).
func (c tlsClock) fresh(cert *x509.Certificate, step, validity time.Duration) bool {
	return !c.now.Before(cert.NotBefore) && c.now.Add(validity-step).Before(cert.NotAfter)
}

// freshLeaf and freshCA are fresh for each kind; without a clock a leaf
// lives as long as the CA.
func (c tlsClock) freshLeaf(cert *x509.Certificate) bool {
	if c.clockless {
		return c.fresh(cert, tlsCAStep, tlsCAValidity)
	}
	return c.fresh(cert, tlsLeafStep, tlsLeafValidity)
}

func (c tlsClock) freshCA(cert *x509.Certificate) bool {
	return c.fresh(cert, tlsCAStep, tlsCAValidity)
}

// periodLabel is a seed label for window k: the first window keeps the
// label it always had, so its keys do not change.
func periodLabel(label string, k int64) string {
	if k == 0 {
		return label
	}
	return label + "\x00period\x00" + strconv.FormatInt(k, 10)
}

// tlsPermittedDomains are the DNS name constraints of the CA: the names
// of the Services of the components that serve TLS, and the namespace's
// svc domain (which holds every <svc>.<ns>.svc and the headless pod
// names). Every name a composed client dials with this CA is one of them;
// a certificate the CA key signed for any other name, such as a public
// one, is refused by every client that trusts the CA.
func (in *Install) tlsPermittedDomains() []string {
	out := []string{in.Namespace + ".svc"}
	for i := range components {
		if c := &components[i]; in.servesTLS(c) {
			svc := in.object(c.Name)
			out = append(out, svc, svc+"."+in.Namespace)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// tlsStatus reports the expiry of the signing CA and of the first
// serving certificate to expire, from the certificates the TLS Secret
// holds (kept or issued: parsing them again from its data would derive
// each key again).
func tlsStatus(ca *x509.Certificate, leaves []*x509.Certificate) *v1alpha1.TLSStatus {
	if ca == nil {
		return nil
	}
	st := &v1alpha1.TLSStatus{CANotAfter: metav1.NewTime(ca.NotAfter), NotAfter: metav1.NewTime(ca.NotAfter)}
	for _, leaf := range leaves {
		if leaf.NotAfter.Before(st.NotAfter.Time) {
			st.NotAfter = metav1.NewTime(leaf.NotAfter)
		}
	}
	return st
}
