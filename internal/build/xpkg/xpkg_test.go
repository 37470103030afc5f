package xpkg

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestSemVer(t *testing.T) {
	type args struct {
		describe string
		count    int
	}
	type want struct {
		v   string
		err error
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"NoTag":         {reason: "Untagged history counts commits.", args: args{describe: "a4a85e6\n", count: 18}, want: want{v: "v0.0.0-18-ga4a85e6"}},
		"NoTagDirty":    {reason: "A dirty tree is a pre-release of its own.", args: args{describe: "a4a85e6-dirty", count: 18}, want: want{v: "v0.0.0-18-ga4a85e6-dirty"}},
		"OnTag":         {reason: "Exactly on a tag, the tag is the version.", args: args{describe: "v1.2.3-0-gabc1234"}, want: want{v: "v1.2.3"}},
		"OnTagDirty":    {reason: "A dirty tree on a tag is a pre-release of the tag.", args: args{describe: "v1.2.3-0-gabc1234-dirty"}, want: want{v: "v1.2.3-dirty"}},
		"AfterTag":      {reason: "Commits after a tag sort after it and before the next patch.", args: args{describe: "v1.2.3-5-gabc1234"}, want: want{v: "v1.2.4-5-gabc1234"}},
		"PreReleaseTag": {reason: "Pre-release tags are refused rather than guessed at.", args: args{describe: "v1.2.3-rc.1-5-gabc1234"}, want: want{err: cmpopts.AnyError}},
		"Garbage":       {reason: "Anything else is an error.", args: args{describe: "release-1"}, want: want{err: cmpopts.AnyError}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v, err := SemVer(tc.args.describe, tc.args.count)
			if diff := cmp.Diff(tc.want.err, err, cmpopts.EquateErrors()); diff != "" {
				t.Errorf("%s\nSemVer(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.v, v); diff != "" {
				t.Errorf("%s\nSemVer(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestPackageName(t *testing.T) {
	cases := map[string]struct {
		reason string
		repo   string
		want   string
	}{
		"GHCR":       {reason: "The registry host is not part of the name.", repo: "ghcr.io/armadaproject/function-armada", want: "armadaproject-function-armada"},
		"Contrib":    {reason: "The name Crossplane gives provider-kubernetes as a dependency.", repo: "xpkg.crossplane.io/crossplane-contrib/provider-kubernetes", want: "crossplane-contrib-provider-kubernetes"},
		"LocalPort":  {reason: "A registry with a port is still only the host.", repo: "127.0.0.1:5000/armadaproject/function-armada", want: "armadaproject-function-armada"},
		"LongIsCut":  {reason: "Names are cut after 63 bytes.", repo: "r.io/" + strings.Repeat("a", 70), want: strings.Repeat("a", 63)},
		"UpperIsCut": {reason: "Only lower-case letters, digits and separators survive.", repo: "r.io/org/fn_x", want: "org-fnx"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := PackageName(tc.repo)
			if err != nil {
				t.Fatalf("%s\nPackageName(%q): %v", tc.reason, tc.repo, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nPackageName(%q): -want, +got:\n%s", tc.reason, tc.repo, diff)
			}
		})
	}
}

func TestDependsOn(t *testing.T) {
	dep := func(kind, pkg, v string) any {
		return map[string]any{"apiVersion": "pkg.crossplane.io/v1", "kind": kind, "package": pkg, "version": v}
	}
	cases := map[string]struct {
		reason string
		built  map[string]bool
		want   []any
	}{
		"FunctionBuilt": {
			reason: "Packages built in the same run are pinned at the same version; the providers the compositions use at their pinned versions.",
			built:  map[string]bool{"function-armada": true},
			want: []any{
				dep(KindFunction, "r.io/o/function-armada", "v1.0.0"),
				dep(KindProvider, "xpkg.crossplane.io/crossplane-contrib/provider-kubernetes", "v1.3.1"),
				dep(KindProvider, "xpkg.crossplane.io/crossplane-contrib/provider-helm", "v1.3.0"),
				dep(KindProvider, "xpkg.crossplane.io/crossplane-contrib/provider-sql", "v0.16.0"),
			},
		},
		"ProviderBuilt": {
			reason: "provider-armada is declared as soon as its package is built.",
			built:  map[string]bool{"function-armada": true, "provider-armada": true},
			want: []any{
				dep(KindFunction, "r.io/o/function-armada", "v1.0.0"),
				dep(KindProvider, "r.io/o/provider-armada", "v1.0.0"),
				dep(KindProvider, "xpkg.crossplane.io/crossplane-contrib/provider-kubernetes", "v1.3.1"),
				dep(KindProvider, "xpkg.crossplane.io/crossplane-contrib/provider-helm", "v1.3.0"),
				dep(KindProvider, "xpkg.crossplane.io/crossplane-contrib/provider-sql", "v0.16.0"),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := &stage{registry: "r.io/o", version: "v1.0.0", built: tc.built, logf: t.Logf}
			if diff := cmp.Diff(tc.want, s.dependsOn()); diff != "" {
				t.Errorf("%s\ndependsOn(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestEveryDependencyHasAMirror checks that every dependency that is not
// ours can be mirrored for the install test.
func TestEveryDependencyHasAMirror(t *testing.T) {
	for _, d := range Dependencies(DefaultRegistry) {
		if d.Built != "" {
			continue
		}
		if _, ok := MirrorFor(d.Package, d.Version); !ok {
			t.Errorf("dependency %s %s has no row in Mirrors", d.Package, d.Version)
		}
	}
}
