//go:build tools

// Package tools pins the versitygw command this module builds, so 'go mod tidy' keeps its
// dependencies in go.sum.
package tools

import (
	_ "github.com/versity/versitygw/cmd/versitygw"
)
