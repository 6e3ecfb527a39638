// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause

// Package node reads what the node's rdmactl knows: its RDMA devices (maxima, ports, GIDs, PCI address,
// NUMA node, firmware) and the node policy for containers, from `rdmactl dev -j`. The driver knows no RDMA
// itself: this JSON is the one truth, kept in the C tree.
package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Unlimited is a policy value of "unlimited".
const Unlimited = math.MaxUint64

// Value is a policy limit: a number, or "unlimited" (Unlimited).
type Value uint64

// UnmarshalJSON takes a number or the string "unlimited".
func (v *Value) UnmarshalJSON(b []byte) error {
	if string(b) == `"unlimited"` {
		*v = Unlimited
		return nil
	}
	n, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("a limit is a whole number or \"unlimited\", not %s", b)
	}
	*v = Value(n)
	return nil
}

// Limits are per kind (rdmactl's kind names: qp, cq, mr, mr_bytes, ...); a kind not in the map is not given.
type Limits map[string]Value

// GID is a port's RoCE v2 IPv4-mapped GID.
type GID struct {
	Index int    `json:"index"`
	GID   string `json:"gid"`
	IP    string `json:"ip"`
}

// Port is one port of a device.
type Port struct {
	Port          int    `json:"port"`
	LinkLayer     string `json:"link_layer"`
	State         string `json:"state"`
	Netdev        string `json:"netdev"`
	RoCEv2IPv4GID *GID   `json:"roce_v2_ipv4_gid"`
}

// Device is one RDMA device of the node.
type Device struct {
	IBDev      string            `json:"ibdev"`
	Uverbs     string            `json:"uverbs"`
	Firmware   string            `json:"firmware"`
	PCIAddress string            `json:"pci_address"`
	NUMANode   *int              `json:"numa_node"`
	Ports      []Port            `json:"ports"`
	Max        map[string]uint64 `json:"max"`
}

// Budget is a named budget of the node policy.
type Budget struct {
	Name   string `json:"name"`
	Limits Limits `json:"limits"`
}

// Policy is the node policy for containers (/etc/rdmactl/containers.conf).
type Policy struct {
	Path    string   `json:"path"`
	Found   bool     `json:"found"`
	Default Limits   `json:"default"`
	Ceiling Limits   `json:"ceiling"`
	Budgets []Budget `json:"budgets"`
}

// Inventory is `rdmactl dev -j`.
type Inventory struct {
	Version string   `json:"version"`
	Devices []Device `json:"devices"`
	Policy  *Policy  `json:"policy"`
}

// Kinds names every kind the policy gives a value for (default, ceiling or a budget).
func (p *Policy) Kinds() map[string]bool {
	k := map[string]bool{}
	if p == nil {
		return k
	}
	for n := range p.Default {
		k[n] = true
	}
	for n := range p.Ceiling {
		k[n] = true
	}
	for _, b := range p.Budgets {
		for n := range b.Limits {
			k[n] = true
		}
	}
	return k
}

// Parse reads `rdmactl dev -j` and checks that it has what the driver needs.
func Parse(b []byte) (*Inventory, error) {
	var inv Inventory
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&inv); err != nil {
		return nil, fmt.Errorf("rdmactl dev -j: %w", err)
	}
	if inv.Version == "" {
		return nil, errors.New("rdmactl dev -j: no \"version\" (an rdmactl older than this driver?)")
	}
	if inv.Policy == nil {
		return nil, errors.New("rdmactl dev -j: no \"policy\" (an rdmactl older than this driver?)")
	}
	for i, d := range inv.Devices {
		if d.IBDev == "" || d.Uverbs == "" || d.Max == nil {
			return nil, fmt.Errorf("rdmactl dev -j: device %d has no ibdev, uverbs or max", i)
		}
	}
	return &inv, nil
}

// Runner runs the node's rdmactl.
type Runner struct {
	// Path of rdmactl (inside HostRoot when that is set).
	Path string
	// HostRoot, when not empty, is the host's root as the driver's container sees it: rdmactl runs chrooted
	// there, so the host's binary runs with the host's libraries (the hooks run that same binary).
	HostRoot string
	// Policy, when not empty, is the policy file rdmactl reads (a host path).
	Policy  string
	Timeout time.Duration
}

func (r *Runner) run(ctx context.Context, args ...string) ([]byte, error) {
	if r.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, r.Path, args...)
	if r.HostRoot != "" && r.HostRoot != "/" {
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: r.HostRoot}
		cmd.Dir = "/"
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return stdout.Bytes(), &RunError{Args: append([]string{r.Path}, args...), Err: err, Stderr: msg}
	}
	return stdout.Bytes(), nil
}

// RunError is a failed run of rdmactl, with what it said.
type RunError struct {
	Args   []string
	Err    error
	Stderr string
}

func (e *RunError) Error() string {
	return fmt.Sprintf("%s: %s", strings.Join(e.Args, " "), e.Stderr)
}

func (e *RunError) Unwrap() error { return e.Err }

// Version is the first line of `rdmactl --version` ("rdmactl 0.1.0"), the version alone.
func (r *Runner) Version(ctx context.Context) (string, error) {
	out, err := r.run(ctx, "--version")
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(out), "\n")
	f := strings.Fields(line)
	if len(f) != 2 || f[0] != "rdmactl" {
		return "", fmt.Errorf("%s --version: %q is not \"rdmactl VERSION\"", r.Path, line)
	}
	return f[1], nil
}

// Inventory runs `rdmactl dev -j` and parses it.
func (r *Runner) Inventory(ctx context.Context) (*Inventory, error) {
	args := []string{"dev", "-j"}
	if r.Policy != "" {
		args = append(args, "--policy", r.Policy)
	}
	out, err := r.run(ctx, args...)
	var re *RunError
	if errors.As(err, &re) && strings.Contains(re.Stderr, "unknown command 'dev'") {
		return nil, fmt.Errorf("%w (the node's rdmactl has no 'dev' command: it is older than this driver; install "+
			"a newer rdmactl on the node)", err)
	}
	if err != nil {
		return nil, err
	}
	return Parse(out)
}

// HookHasScope says whether the node's `rdmactl oci-hook` takes --scope (pod budgets from hook arguments).
func (r *Runner) HookHasScope(ctx context.Context) (bool, error) {
	out, err := r.run(ctx, "oci-hook", "--help")
	if err != nil {
		return false, err
	}
	return strings.Contains(string(out), "--scope"), nil
}

// MemTotal is the node's memory in bytes (/proc/meminfo under hostRoot), or 0.
func MemTotal(hostRoot string) uint64 {
	b, err := os.ReadFile(filepath.Join(hostRoot, "/proc/meminfo"))
	if err != nil {
		return 0
	}
	return parseMemTotal(string(b))
}

func parseMemTotal(s string) uint64 {
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == "MemTotal:" && f[2] == "kB" {
			n, err := strconv.ParseUint(f[1], 10, 64)
			if err == nil {
				return n << 10
			}
		}
	}
	return 0
}
