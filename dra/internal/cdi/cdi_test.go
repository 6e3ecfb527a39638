// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause

package cdi

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestLimits(t *testing.T) {
	for _, tc := range []struct {
		in   map[string]uint64
		want string
	}{
		{nil, ""},
		{map[string]uint64{"qp": 8}, "qp=8"},
		{map[string]uint64{"qp": 8, "mr_bytes": 1 << 30, "cq": 16, "mr": 64}, "cq=16,mr=64,mr_bytes=1073741824,qp=8"},
	} {
		if got := Limits(tc.in); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestClaimSpec(t *testing.T) {
	uid := "0b5a4c1e-7f3d-4d2a-9a61-3c2f0d9e8a11"
	allocs := []Alloc{{Device: "rxe0", Nodes: []string{"/dev/infiniband/uverbs0", "/dev/infiniband/rdma_cm"},
		Env: []string{"RDMACTL_DRA_IBDEV_RXE0=rxe0"}}}
	limits := map[string]uint64{"qp": 8, "mr_bytes": 1 << 30}
	for _, tc := range []struct {
		name string
		hook HookConfig
		args []string // the createRuntime hook's; poststop's end in poststop instead
	}{
		{"container scope", HookConfig{Rdmactl: "/usr/local/bin/rdmactl"},
			[]string{"rdmactl", "oci-hook", "--limit", "mr_bytes=1073741824,qp=8", "createRuntime"}},
		{"pod scope and a policy", HookConfig{Rdmactl: "/usr/bin/rdmactl", Policy: "/etc/rdmactl/k8s.conf", PodScope: true},
			[]string{"rdmactl", "oci-hook", "--policy", "/etc/rdmactl/k8s.conf", "--scope", "pod", "--limit",
				"mr_bytes=1073741824,qp=8", "createRuntime"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ClaimSpec(uid, allocs, limits, &tc.hook)
			if s.Version != "0.3.0" || s.Kind != "rdmactl.io/claim" || len(s.Devices) != 1 {
				t.Fatalf("spec %+v", s)
			}
			d := s.Devices[0]
			if d.Name != "rxe0-"+uid || ID(uid, "rxe0") != "rdmactl.io/claim=rxe0-"+uid || DeviceName(uid, "0dev") != "d0dev-"+uid {
				t.Errorf("name %s, id %s", d.Name, ID(uid, "rxe0"))
			}
			e := d.ContainerEdits
			if !reflect.DeepEqual(e.DeviceNodes, []DeviceNode{{"/dev/infiniband/uverbs0"}, {"/dev/infiniband/rdma_cm"}}) {
				t.Errorf("nodes %v", e.DeviceNodes)
			}
			if len(e.Hooks) != 2 || e.Hooks[0].HookName != "createRuntime" || e.Hooks[1].HookName != "poststop" {
				t.Fatalf("hooks %+v", e.Hooks)
			}
			if e.Hooks[0].Path != tc.hook.Rdmactl || !reflect.DeepEqual(e.Hooks[0].Args, tc.args) {
				t.Errorf("createRuntime %+v, want args %v", e.Hooks[0], tc.args)
			}
			post := append(append([]string{}, tc.args[:len(tc.args)-1]...), "poststop")
			if !reflect.DeepEqual(e.Hooks[1].Args, post) {
				t.Errorf("poststop %v, want %v", e.Hooks[1].Args, post)
			}
		})
	}
	// no consumed capacity: hooks without --limit (the node policy alone)
	s := ClaimSpec(uid, allocs, nil, &HookConfig{Rdmactl: "/r"})
	if got := s.Devices[0].ContainerEdits.Hooks[0].Args; !reflect.DeepEqual(got, []string{"rdmactl", "oci-hook", "createRuntime"}) {
		t.Errorf("args %v", got)
	}
}

func TestWriteRemove(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cdi")
	uid := "u-1"
	s := ClaimSpec(uid, []Alloc{{Device: "rxe0", Nodes: []string{"/dev/infiniband/uverbs0"}}}, map[string]uint64{"qp": 2},
		&HookConfig{Rdmactl: "/usr/local/bin/rdmactl"})
	if err := Write(dir, uid, s); err != nil {
		t.Fatal(err)
	}
	path := FileName(dir, uid)
	if filepath.Base(path) != "rdmactl.io-claim_u-1.json" {
		t.Errorf("file %s", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var back Spec
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(&back, s) {
		t.Errorf("read back %+v %v", back, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", fi.Mode())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("left in %s: %v", dir, entries)
	}
	if err := Remove(dir, uid); err != nil {
		t.Fatal(err)
	}
	if err := Remove(dir, uid); err != nil {
		t.Errorf("a second remove: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("still there: %v", err)
	}
}

var update = flag.Bool("update", false, "rewrite testdata/claim.json")

// testdata/claim.json is what the driver writes for a claim of rxe0 with a budget; tests/dra.bats runs its
// hooks' arguments through the real rdmactl oci-hook. go test -update rewrites it.
func TestGolden(t *testing.T) {
	s := ClaimSpec("0b5a4c1e-7f3d-4d2a-9a61-3c2f0d9e8a11",
		[]Alloc{{Device: "rxe0", Nodes: []string{"/dev/infiniband/uverbs0", "/dev/infiniband/rdma_cm"},
			Env: []string{"RDMACTL_DRA_IBDEV_RXE0=rxe0"}}},
		map[string]uint64{"qp": 16, "cq": 32, "mr": 64, "mr_bytes": 1 << 30},
		&HookConfig{Rdmactl: "/usr/local/bin/rdmactl"})
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	if *update {
		if err := os.WriteFile("testdata/claim.json", b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("testdata/claim.json")
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(b) {
		t.Errorf("testdata/claim.json differs (go test -update rewrites it):\n%s", b)
	}
}
