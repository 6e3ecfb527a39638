// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause

package driver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/utils/ptr"

	"github.com/rdmactl/rdmactl/dra/internal/cdi"
	"github.com/rdmactl/rdmactl/dra/internal/node"
)

func result(req, pool, dev string, consumed map[string]string) resourceapi.DeviceRequestAllocationResult {
	r := resourceapi.DeviceRequestAllocationResult{Request: req, Driver: "rdmactl.io", Pool: pool, Device: dev}
	if consumed != nil {
		r.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{}
		for k, v := range consumed {
			r.ConsumedCapacity[resourceapi.QualifiedName(k)] = resource.MustParse(v)
		}
		r.ShareID = ptr.To(types.UID("share-" + req))
	}
	return r
}

func claim(uid string, results ...resourceapi.DeviceRequestAllocationResult) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: types.UID(uid)}}
	if results != nil {
		c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results}}
	}
	return c
}

func TestBudget(t *testing.T) {
	for _, tc := range []struct {
		name    string
		results []resourceapi.DeviceRequestAllocationResult
		want    map[string]uint64
		ok      bool
		err     string
	}{
		{"one device", []resourceapi.DeviceRequestAllocationResult{
			result("rdma", "n1", "rxe0", map[string]string{"qp": "64", "cq": "128", "mr": "16", "mr_bytes": "2Gi"})},
			map[string]uint64{"qp": 64, "cq": 128, "mr": 16, "mr_bytes": 2 << 30}, true, ""},
		{"two requests: summed; a qualified name of the driver's, another domain's left out", []resourceapi.DeviceRequestAllocationResult{
			result("a", "n1", "rxe0", map[string]string{"qp": "8", "mr_bytes": "1Gi"}),
			result("b", "n1", "rxe1", map[string]string{"rdmactl.io/qp": "4", "example.com/x": "9"})},
			map[string]uint64{"qp": 12, "mr_bytes": 1 << 30}, true, ""},
		{"a fraction rounds up", []resourceapi.DeviceRequestAllocationResult{
			result("a", "n1", "rxe0", map[string]string{"qp": "1500m"})},
			map[string]uint64{"qp": 2}, true, ""},
		{"no consumed capacity (the feature off): the policy alone", []resourceapi.DeviceRequestAllocationResult{
			result("a", "n1", "rxe0", nil)}, nil, false, ""},
		{"negative", []resourceapi.DeviceRequestAllocationResult{
			result("a", "n1", "rxe0", map[string]string{"qp": "-1"})}, nil, false, "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := Budget(tc.results, "rdmactl.io")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%v %v %v, want %v %v", got, ok, err, tc.want, tc.ok)
			}
		})
	}
}

func TestResults(t *testing.T) {
	other := result("gpu", "n1", "gpu0", nil)
	other.Driver = "gpu.example.com"
	c := claim("u", result("a", "n1", "rxe0", nil), other)
	got, err := Results(c, "rdmactl.io", "n1")
	if err != nil || len(got) != 1 || got[0].Device != "rxe0" {
		t.Errorf("%v %v", got, err)
	}
	if _, err := Results(c, "rdmactl.io", "n2"); err == nil || !strings.Contains(err.Error(), "not this node's") {
		t.Errorf("another node's pool: %v", err)
	}
	if _, err := Results(claim("u"), "rdmactl.io", "n1"); err == nil || !strings.Contains(err.Error(), "not allocated") {
		t.Errorf("unallocated: %v", err)
	}
}

// Prepare and unprepare against a CDI directory and a fake /dev/infiniband: the claim's budget in the hooks,
// the device nodes, the ids answered; nothing left after unprepare.
func TestPrepareUnprepare(t *testing.T) {
	b, err := os.ReadFile("../node/testdata/rxe0.json")
	if err != nil {
		t.Fatal(err)
	}
	inv, err := node.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "dev/infiniband"), 0o755); err != nil {
		t.Fatal(err)
	}
	cdiDir := filepath.Join(root, "cdi")
	cfg := Config{DriverName: "rdmactl.io", NodeName: "n1", CDIDir: cdiDir, HostRoot: root, DevDir: "/dev/infiniband",
		Hook: cdi.HookConfig{Rdmactl: "/usr/local/bin/rdmactl", PodScope: true}}
	d := New(cfg, nil, inv, nil)
	ctx := t.Context()

	for _, withCM := range []bool{false, true} {
		if withCM {
			if err := os.WriteFile(filepath.Join(root, "dev/infiniband/rdma_cm"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		c := claim("uid-1",
			result("a", "n1", "rxe0", map[string]string{"qp": "8", "cq": "16", "mr": "4", "mr_bytes": "1Gi"}),
			result("b", "n1", "rxe0", map[string]string{"qp": "2", "cq": "1", "mr": "1", "mr_bytes": "1Mi"}))
		res, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{c, claim("uid-2", result("a", "n1", "mlx9", nil))})
		if err != nil {
			t.Fatal(err)
		}
		r := res["uid-1"]
		if r.Err != nil || len(r.Devices) != 2 {
			t.Fatalf("uid-1: %+v", r)
		}
		want := kubeletplugin.Device{Requests: []string{"a"}, PoolName: "n1", DeviceName: "rxe0",
			CDIDeviceIDs: []string{"rdmactl.io/claim=rxe0-uid-1"}, ShareID: ptr.To(types.UID("share-a"))}
		if !reflect.DeepEqual(r.Devices[0], want) {
			t.Errorf("device %+v, want %+v", r.Devices[0], want)
		}
		if e := res["uid-2"].Err; e == nil || !strings.Contains(e.Error(), "not on this node") {
			t.Errorf("uid-2: %v", e)
		}
		spec, err := os.ReadFile(cdi.FileName(cdiDir, "uid-1"))
		if err != nil {
			t.Fatal(err)
		}
		var s cdi.Spec
		if err := json.Unmarshal(spec, &s); err != nil {
			t.Fatal(err)
		}
		// one CDI device for the two shares of rxe0; the budget is the claim's sum
		if len(s.Devices) != 1 {
			t.Fatalf("spec %s", spec)
		}
		nodes := []cdi.DeviceNode{{Path: "/dev/infiniband/uverbs0"}}
		if withCM {
			nodes = append(nodes, cdi.DeviceNode{Path: "/dev/infiniband/rdma_cm"})
		}
		e := s.Devices[0].ContainerEdits
		if !reflect.DeepEqual(e.DeviceNodes, nodes) {
			t.Errorf("nodes %v, want %v", e.DeviceNodes, nodes)
		}
		args := strings.Join(e.Hooks[0].Args, " ")
		if args != "rdmactl oci-hook --scope pod --limit cq=17,mr=5,mr_bytes=1074790400,qp=10 createRuntime" {
			t.Errorf("hook args %q", args)
		}
		if _, err := os.Stat(cdi.FileName(cdiDir, "uid-2")); !os.IsNotExist(err) {
			t.Errorf("a spec for a claim that failed: %v", err)
		}
	}
	un, err := d.UnprepareResourceClaims(ctx, []kubeletplugin.NamespacedObject{{UID: "uid-1"}, {UID: "uid-never"}})
	if err != nil || un["uid-1"] != nil || un["uid-never"] != nil {
		t.Errorf("unprepare %v %v", un, err)
	}
	if entries, _ := os.ReadDir(cdiDir); len(entries) != 0 {
		t.Errorf("left in the CDI directory: %v", entries)
	}
}
