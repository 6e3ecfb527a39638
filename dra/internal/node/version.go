// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause

package node

import (
	"fmt"
	"strconv"
	"strings"
)

// DriverVersion is this driver's version; the build sets it to rdmactl's (-ldflags -X).
var DriverVersion = "0.1.0"

// Skew is how the node's rdmactl relates to this driver.
type Skew int

const (
	// Same version.
	SkewNone Skew = iota
	// Same major and minor, another patch level: the JSON and the hook's arguments are the same.
	SkewPatch
	// Another major or minor version: the JSON or the hook's arguments may differ.
	SkewIncompatible
)

func parseVersion(v string) ([3]int, error) {
	var out [3]int
	core, _, _ := strings.Cut(v, "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return out, fmt.Errorf("version %q is not MAJOR.MINOR.PATCH", v)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return out, fmt.Errorf("version %q is not MAJOR.MINOR.PATCH", v)
		}
		out[i] = n
	}
	return out, nil
}

// CompareVersions says how rdmactl's version stands to the driver's, and why, in words for a log.
func CompareVersions(driver, rdmactl string) (Skew, string, error) {
	d, err := parseVersion(driver)
	if err != nil {
		return SkewIncompatible, "", fmt.Errorf("the driver's %w", err)
	}
	r, err := parseVersion(rdmactl)
	if err != nil {
		return SkewIncompatible, "", fmt.Errorf("the node's rdmactl: %w", err)
	}
	switch {
	case d == r:
		return SkewNone, fmt.Sprintf("rdmactl-dra %s and the node's rdmactl %s are the same version", driver, rdmactl), nil
	case d[0] == r[0] && d[1] == r[1]:
		return SkewPatch, fmt.Sprintf("rdmactl-dra %s and the node's rdmactl %s differ in the patch level only",
			driver, rdmactl), nil
	default:
		return SkewIncompatible, fmt.Sprintf("rdmactl-dra %s and the node's rdmactl %s differ in their major or "+
			"minor version: the devices' JSON and the hook's arguments may not be what this driver expects; "+
			"install the same version of both (the image and the node's package)", driver, rdmactl), nil
	}
}
