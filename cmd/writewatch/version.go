package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is writewatch's version, from the build info: the module
// version `go install ...@v1.2.3` builds, or the one the go command
// derives from the git checkout it builds in (v0.0.0-DATE-REVISION, with
// +dirty for uncommitted changes); "devel" when neither is known.
var version = buildVersion(readBuildInfo())

// buildInfo is what --version tells, from the build info.
type buildInfo struct {
	module   string // Main.Version, "(devel)" when unknown
	revision string // vcs.revision, "" without VCS information
	time     string // vcs.time
	modified bool   // vcs.modified
	goVer    string
}

func readBuildInfo() buildInfo {
	b := buildInfo{module: "(devel)", goVer: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if info.Main.Version != "" {
		b.module = info.Main.Version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.revision = s.Value
		case "vcs.time":
			b.time = s.Value
		case "vcs.modified":
			b.modified = s.Value == "true"
		}
	}
	return b
}

func buildVersion(b buildInfo) string {
	switch {
	case b.module != "(devel)":
		return b.module
	case b.revision != "":
		v := "devel-" + short(b.revision)
		if b.modified {
			v += "+dirty"
		}
		return v
	}
	return "devel"
}

// versionText is what --version prints.
func versionText(b buildInfo) string {
	vcs := "no VCS information (built outside a git checkout, or with -buildvcs=false)"
	if b.revision != "" {
		vcs = "revision " + b.revision
		if b.time != "" {
			vcs += " of " + b.time
		}
		if b.modified {
			vcs += ", with uncommitted changes (dirty)"
		}
	}
	return fmt.Sprintf("writewatch %s\n%s\nbuilt with %s for %s/%s\n",
		buildVersion(b), vcs, b.goVer, runtime.GOOS, runtime.GOARCH)
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
