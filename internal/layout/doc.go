// Package layout holds no code: its tests check the shape of the
// repository that docs/architecture.md describes, such as the length of
// functions and the size of package run.
package layout
