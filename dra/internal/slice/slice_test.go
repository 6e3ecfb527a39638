// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause

package slice

import (
	"encoding/json"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/dra/internal/node"
)

func rxe0(t *testing.T) *node.Inventory {
	t.Helper()
	b, err := os.ReadFile("../node/testdata/rxe0.json")
	if err != nil {
		t.Fatal(err)
	}
	inv, err := node.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

func TestParseAmounts(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]Amount
		err  string
	}{
		{"", map[string]Amount{}, ""},
		{"qp=64,mr-bytes=4Gi cq=10%", map[string]Amount{"qp": {N: 64}, "mr_bytes": {N: 4 << 30}, "cq": {N: 10, Percent: true}}, ""},
		{"mr_bytes=8G", map[string]Amount{"mr_bytes": {N: 8 << 30}}, ""},
		{"mr_bytes=1k", map[string]Amount{"mr_bytes": {N: 1000}}, ""},
		{"qp", nil, "KIND=N"},
		{"qp=1,qp=2", nil, "given twice"},
		{"qp=101%", nil, "0% to 100%"},
		{"qp=-1", nil, "not a whole number"},
	} {
		got, err := ParseAmounts(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: %v %v, want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestDeviceName(t *testing.T) {
	for in, want := range map[string]string{"rxe0": "rxe0", "mlx5_0": "mlx5-0", "Bnxt_RE1": "bnxt-re1", "__": "rdma"} {
		if got := DeviceName(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

func TestCapacities(t *testing.T) {
	inv := rxe0(t)
	d := &inv.Devices[0]
	noPolicy := &node.Policy{}
	for _, tc := range []struct {
		name string
		pol  *node.Policy
		cfg  Config
		want []Capacity
	}{
		{
			name: "policy: default and ceiling; budgets name pd; mr_bytes from the node's memory",
			pol:  inv.Policy,
			cfg:  Config{MemTotal: 2 << 30},
			want: []Capacity{
				{"cq", 1048576, 16, 512},
				{"mr", 524287, 64, 4096},
				{"mr_bytes", 2 << 30, 2 << 30, 2 << 30}, // the ceiling (64G) and default (8G) above the node's memory
				{"pd", 1048576, 1048576, 1048576},       // named by a budget, no default or ceiling: the whole device
				{"qp", 1048560, 8, 256},
			},
		},
		{
			name: "reserve and cap make capacity small; ceiling and default within it",
			pol:  inv.Policy,
			cfg: Config{MemTotal: 16 << 30, Reserve: map[string]Amount{"qp": {N: 1048560 - 12}, "mr_bytes": {N: 50, Percent: true}},
				Cap: map[string]Amount{"cq": {N: 10}}},
			want: []Capacity{
				{"cq", 10, 10, 10},
				{"mr", 524287, 64, 4096},
				{"mr_bytes", 8 << 30, 8 << 30, 8 << 30},
				{"pd", 1048576, 1048576, 1048576},
				{"qp", 12, 8, 12},
			},
		},
		{
			name: "no policy: the base kinds, default the whole device; a reserve above the maximum leaves 0",
			pol:  noPolicy,
			cfg:  Config{Reserve: map[string]Amount{"mr": {N: 1 << 40}}},
			want: []Capacity{
				{"cq", 1048576, 1048576, 1048576},
				{"mr", 0, 0, 0},
				{"mr_bytes", math.MaxInt64, math.MaxInt64, math.MaxInt64}, // max_mr_size 2^64-1, no MemTotal: a Quantity's most
				{"qp", 1048560, 1048560, 1048560},
			},
		},
		{
			name: "a cap publishes a kind without a device maximum (ctx); wr never",
			pol:  noPolicy,
			cfg:  Config{MemTotal: 1 << 30, Cap: map[string]Amount{"ctx": {N: 32}, "wr": {N: 5}, "qp": {N: 50, Percent: true}}},
			want: []Capacity{
				{"cq", 1048576, 1048576, 1048576},
				{"ctx", 32, 32, 32},
				{"mr", 524287, 524287, 524287},
				{"mr_bytes", 1 << 30, 1 << 30, 1 << 30},
				{"qp", 524280, 524280, 524280},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Capacities(d, tc.pol, &tc.cfg)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
			for _, c := range got {
				if c.Default > c.Max || c.Max > c.Value {
					t.Errorf("%s: default %d, max %d, value %d: not default <= max <= value", c.Kind, c.Default, c.Max, c.Value)
				}
			}
		})
	}
}

// The device as the API sees it (JSON): attributes, capacities with their request policies, shared.
func TestDevice(t *testing.T) {
	inv := rxe0(t)
	numa := 1
	inv.Devices[0].NUMANode = &numa
	inv.Devices[0].PCIAddress = "0000:03:00.0"
	dev := Device(&inv.Devices[0], inv.Policy, &Config{MemTotal: 4 << 30, Reserve: map[string]Amount{"qp": {N: 1048560 - 100}}})
	b, err := json.Marshal(dev)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := `{"allowMultipleAllocations":true,"attributes":{"firmware":{"string":"0.0.0"},"ibdev":{"string":"rxe0"},` +
		`"linkLayer":{"string":"Ethernet"},"netdev":{"string":"veth0"},"numaNode":{"int":1},"pciAddress":{"string":"0000:03:00.0"},` +
		`"roceV2IPv4GID":{"string":"::ffff:192.0.2.1"}},"capacity":{` +
		`"cq":{"requestPolicy":{"default":"16","validRange":{"max":"512","min":"0"}},"value":"1048576"},` +
		`"mr":{"requestPolicy":{"default":"64","validRange":{"max":"4096","min":"0"}},"value":"524287"},` +
		`"mr_bytes":{"requestPolicy":{"default":"4Gi","validRange":{"max":"4Gi","min":"0"}},"value":"4Gi"},` +
		`"pd":{"requestPolicy":{"default":"1048576","validRange":{"max":"1048576","min":"0"}},"value":"1048576"},` +
		`"qp":{"requestPolicy":{"default":"8","validRange":{"max":"100","min":"0"}},"value":"100"}},"name":"rxe0"}`
	var w map[string]any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, w) {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	// a software device: no PCI address or NUMA node attribute
	dev = Device(&rxe0(t).Devices[0], inv.Policy, &Config{})
	if _, ok := dev.Attributes["pciAddress"]; ok {
		t.Error("pciAddress on rxe")
	}
	if _, ok := dev.Attributes["numaNode"]; ok {
		t.Error("numaNode on rxe")
	}
	if n := len(dev.Attributes) + len(dev.Capacity); n > 32 {
		t.Errorf("%d attributes and capacities, the API takes 32", n)
	}
}

func TestDevicesClash(t *testing.T) {
	inv := rxe0(t)
	a := inv.Devices[0]
	a.IBDev = "mlx5_0"
	b := inv.Devices[0]
	b.IBDev = "mlx5-0"
	inv.Devices = []node.Device{a, b}
	devs, err := Devices(inv, &Config{})
	if len(devs) != 1 || err == nil || !strings.Contains(err.Error(), "mlx5-0 left out") {
		t.Errorf("%d devices, %v", len(devs), err)
	}
}
