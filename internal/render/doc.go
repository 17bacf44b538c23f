// Package render writes a report.Report in the forms people and CI read:
// the text summary printed at the end of a run (WriteText), JUnit XML
// (WriteJUnit), GitHub annotations and the step summary
// (WriteGitHubAnnotations, WriteGitHubSummary), and the config
// --suggest-config proposes (WriteSuggestedConfig), with the How to fix
// advice they share (Suggest). Each takes an io.Writer and is checked
// against golden files in testdata/ (go test -update rewrites them).
package render
