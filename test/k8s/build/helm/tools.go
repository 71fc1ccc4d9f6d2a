//go:build tools

// Package tools pins the helm command this module builds, so 'go mod tidy' keeps its
// dependencies in go.sum.
package tools

import (
	_ "helm.sh/helm/v4/cmd/helm"
)
