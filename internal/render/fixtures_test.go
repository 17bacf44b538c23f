package render

import "github.com/writewatch/writewatch/internal/reporttest"

// The golden tests' reports (package reporttest).
var (
	cases              = reporttest.Cases
	emptyReport        = reporttest.Empty
	richReport         = reporttest.Rich
	lostReport         = reporttest.Lost
	enforcedReport     = reporttest.Enforced
	lostRefusalsReport = reporttest.LostRefusals
	testsReport        = reporttest.Tests
	survivorsReport    = reporttest.Survivors
	witnessedReport    = reporttest.Witnessed
	crossTestReport    = reporttest.CrossTest
	t0                 = reporttest.T0
	goTest             = reporttest.GoTest
	pkgTest            = reporttest.PkgTest
)
