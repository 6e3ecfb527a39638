// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause

package slice

import (
	"encoding/json"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/devices.json")

// testdata/devices.json: the devices of rxe0 under three configurations, as the driver publishes them. The
// module in dra/apivalidate runs them through Kubernetes' own ResourceSlice validation. go test -update
// rewrites the file.
func TestGolden(t *testing.T) {
	inv := rxe0(t)
	numa := 0
	inv.Devices[0].NUMANode = &numa
	inv.Devices[0].PCIAddress = "0000:03:00.0"
	var all [][]any
	for _, cfg := range []Config{
		{MemTotal: 4 << 30},
		{},
		{Reserve: map[string]Amount{"qp": {N: 1 << 30}}, Cap: map[string]Amount{"ctx": {N: 5}}},
	} {
		devs, err := Devices(inv, &cfg)
		if err != nil {
			t.Fatal(err)
		}
		var l []any
		for _, d := range devs {
			l = append(l, d)
		}
		all = append(all, l)
	}
	b, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	if *update {
		if err := os.WriteFile("testdata/devices.json", b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("testdata/devices.json")
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(b) {
		t.Errorf("testdata/devices.json differs (go test -update rewrites it):\n%s", b)
	}
}
