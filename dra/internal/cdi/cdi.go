// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause

// Package cdi writes one CDI spec per prepared claim: for each RDMA device allocated to the claim, its
// uverbs device node and rdma_cm, and the hooks that run the host's `rdmactl oci-hook` with the claim's
// budget (its consumed capacity) at createRuntime and poststop.
package cdi

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

const (
	// Vendor of the CDI kind: the driver's domain.
	Vendor = "rdmactl.io"
	// Class of the claims' devices: rdmactl.io/claim=DEVICE-CLAIMUID.
	Class = "claim"
	// Version of the specs: 0.3.0 has hooks and is read by podman 4.3, CRI-O and containerd alike.
	Version = "0.3.0"
)

// Spec is a CDI spec file (the parts this driver writes).
type Spec struct {
	Version string   `json:"cdiVersion"`
	Kind    string   `json:"kind"`
	Devices []Device `json:"devices"`
}

// Device is one CDI device.
type Device struct {
	Name           string         `json:"name"`
	ContainerEdits ContainerEdits `json:"containerEdits"`
}

// ContainerEdits are what a device adds to a container.
type ContainerEdits struct {
	Env         []string     `json:"env,omitempty"`
	DeviceNodes []DeviceNode `json:"deviceNodes,omitempty"`
	Hooks       []Hook       `json:"hooks,omitempty"`
}

// DeviceNode is a device node by its host path (the runtime reads its type and numbers there).
type DeviceNode struct {
	Path string `json:"path"`
}

// Hook is an OCI hook.
type Hook struct {
	HookName string   `json:"hookName"`
	Path     string   `json:"path"`
	Args     []string `json:"args,omitempty"`
}

// HookConfig says how the hooks run rdmactl on the host.
type HookConfig struct {
	// Rdmactl is the host path of rdmactl.
	Rdmactl string
	// Policy, when not empty, is the node policy file the hook reads (else its default).
	Policy string
	// PodScope adds "--scope pod": the claim's budget is its pod's (one budget for the pod's containers that
	// share the claim) instead of each container's. Needs an rdmactl whose oci-hook takes --scope.
	PodScope bool
}

// Alloc is one RDMA device allocated to a claim.
type Alloc struct {
	// Device is the device's name in the ResourceSlice.
	Device string
	// Nodes are its device nodes (host paths): the uverbs node, rdma_cm.
	Nodes []string
	// Env are KEY=VALUE the container gets with it.
	Env []string
}

// Limits formats a budget as the hook's --limit takes it: "cq=16,mr=64,mr_bytes=1073741824,qp=8" (sorted).
func Limits(l map[string]uint64) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%d", k, l[k])
	}
	return b.String()
}

func hooks(h *HookConfig, limits map[string]uint64) []Hook {
	var out []Hook
	for _, stage := range []string{"createRuntime", "poststop"} {
		args := []string{"rdmactl", "oci-hook"}
		if h.Policy != "" {
			args = append(args, "--policy", h.Policy)
		}
		if h.PodScope {
			args = append(args, "--scope", "pod")
		}
		if len(limits) > 0 {
			args = append(args, "--limit", Limits(limits))
		}
		args = append(args, stage)
		out = append(out, Hook{HookName: stage, Path: h.Rdmactl, Args: args})
	}
	return out
}

var cdiNameBad = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// DeviceName is the CDI device name of a claim's device, DEVICE-CLAIMUID: unique per claim, so a runtime's
// cached spec of an earlier claim never stands in for it. cdiVersion 0.3.0 wants a letter first: a device
// name that starts otherwise gets a "d".
func DeviceName(claimUID, device string) string {
	n := cdiNameBad.ReplaceAllString(device+"-"+claimUID, "_")
	if c := n[0]; !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') {
		n = "d" + n
	}
	return n
}

// ID is the fully qualified CDI device id the kubelet hands the runtime.
func ID(claimUID, device string) string {
	return Vendor + "/" + Class + "=" + DeviceName(claimUID, device)
}

// ClaimSpec is the spec of one claim: a device per allocated RDMA device, each with the claim's whole budget
// in its hooks (a container given two of them asks the same budget twice, and the hook takes the smaller of
// equal requests: the claim's budget once).
func ClaimSpec(claimUID string, allocs []Alloc, limits map[string]uint64, h *HookConfig) *Spec {
	s := &Spec{Version: Version, Kind: Vendor + "/" + Class}
	for _, a := range allocs {
		d := Device{Name: DeviceName(claimUID, a.Device)}
		for _, n := range a.Nodes {
			d.ContainerEdits.DeviceNodes = append(d.ContainerEdits.DeviceNodes, DeviceNode{Path: n})
		}
		d.ContainerEdits.Env = a.Env
		d.ContainerEdits.Hooks = hooks(h, limits)
		s.Devices = append(s.Devices, d)
	}
	return s
}

// FileName is the spec file of a claim in the CDI directory.
func FileName(dir, claimUID string) string {
	return filepath.Join(dir, Vendor+"-"+Class+"_"+cdiNameBad.ReplaceAllString(claimUID, "_")+".json")
}

// Write puts the spec in place with one rename (a runtime never reads half a file).
func Write(dir, claimUID string, s *Spec) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := FileName(dir, claimUID)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Remove deletes a claim's spec; a spec that is not there is not an error.
func Remove(dir, claimUID string) error {
	err := os.Remove(FileName(dir, claimUID))
	if os.IsNotExist(err) {
		return nil
	}
	return err
}
