package testenv

import (
	"testing"
)

// TestS3 starts the server, creates a bucket and lists what is in it.
func TestS3(t *testing.T) {
	s := StartS3(t)
	s.CreateBucket(t, "b")
	if got := s.Keys(t, "b"); len(got) != 0 {
		t.Errorf("a new bucket holds %v, want nothing", got)
	}
}
