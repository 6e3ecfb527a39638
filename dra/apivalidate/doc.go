// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause

// Package apivalidate checks the driver's ResourceSlice devices (../internal/slice/testdata/devices.json,
// kept current by that package's tests) with Kubernetes v1.36.3's own validation, the API server's code.
// A module of its own: it needs k8s.io/kubernetes (every staging module pinned to v0.36.3 by replace, as
// tests/k8s/build does), far more than the driver. Run by hand, where that build's modules are cached:
//
//	cd dra/apivalidate && GOTOOLCHAIN=local go test -trimpath ./...
package apivalidate
