// Package plugins holds the helpers writewatch puts in COMMAND's way so
// that test runners announce their test boundaries (see docs/protocol.md).
package plugins

import _ "embed"

// PytestModule is the module name of the pytest plugin.
const PytestModule = "writewatch_pytest"

// Pytest is the source of the pytest plugin, writewatch_pytest.py.
//
//go:embed writewatch_pytest.py
var Pytest []byte
