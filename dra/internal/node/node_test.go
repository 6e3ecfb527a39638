// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause

package node

import (
	"os"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	rxe0, err := os.ReadFile("testdata/rxe0.json")
	if err != nil {
		t.Fatal(err)
	}
	inv, err := Parse(rxe0)
	if err != nil {
		t.Fatalf("rxe0.json: %v", err)
	}
	d := inv.Devices[0]
	if d.IBDev != "rxe0" || d.Uverbs != "/dev/infiniband/uverbs0" || d.NUMANode != nil || d.PCIAddress != "" {
		t.Errorf("device: %+v", d)
	}
	if d.Max["mr_bytes"] != 1<<64-1 || d.Max["qp"] != 1048560 {
		t.Errorf("max: %v", d.Max)
	}
	if g := d.Ports[0].RoCEv2IPv4GID; g == nil || g.GID != "::ffff:192.0.2.1" || g.Index != 1 {
		t.Errorf("gid: %+v", g)
	}
	if inv.Policy.Ceiling["wr"] != Unlimited || inv.Policy.Default["mr_bytes"] != 8<<30 {
		t.Errorf("policy: %+v", inv.Policy)
	}
	kinds := inv.Policy.Kinds()
	for _, k := range []string{"qp", "cq", "mr", "mr_bytes", "wr", "pd"} {
		if !kinds[k] {
			t.Errorf("policy kinds %v: no %s", kinds, k)
		}
	}

	for _, tc := range []struct {
		name, json, err string
	}{
		{"empty node", `{"version":"0.1.0","devices":[],"policy":{"path":"p","found":false,"default":null,"ceiling":null,"budgets":[]}}`, ""},
		{"no version", `{"devices":[],"policy":{}}`, "no \"version\""},
		{"no policy", `{"version":"0.1.0","devices":[]}`, "no \"policy\""},
		{"device without max", `{"version":"0.1.0","devices":[{"ibdev":"x","uverbs":"/dev/infiniband/uverbs0"}],"policy":{}}`, "has no ibdev, uverbs or max"},
		{"bad limit", `{"version":"0.1.0","devices":[],"policy":{"ceiling":{"qp":"lots"}}}`, "whole number or \"unlimited\""},
		{"not json", `rdmactl: oops`, "rdmactl dev -j"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.json))
			if tc.err == "" && err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("error %v, want one with %q", err, tc.err)
			}
		})
	}
}

func TestCompareVersions(t *testing.T) {
	for _, tc := range []struct {
		driver, rdmactl string
		skew            Skew
		err             bool
	}{
		{"0.1.0", "0.1.0", SkewNone, false},
		{"0.1.0", "0.1.3", SkewPatch, false},
		{"0.1.0", "0.2.0", SkewIncompatible, false},
		{"1.1.0", "0.1.0", SkewIncompatible, false},
		{"0.1.0", "0.1.0-rc1", SkewNone, false},
		{"0.1.0", "0.1", SkewIncompatible, true},
		{"0.1.0", "x.y.z", SkewIncompatible, true},
	} {
		skew, msg, err := CompareVersions(tc.driver, tc.rdmactl)
		if (err != nil) != tc.err || skew != tc.skew {
			t.Errorf("%s vs %s: %v %q %v, want %v (error %v)", tc.driver, tc.rdmactl, skew, msg, err, tc.skew, tc.err)
		}
		if err == nil && !strings.Contains(msg, tc.rdmactl) {
			t.Errorf("%s vs %s: the message %q does not name rdmactl's version", tc.driver, tc.rdmactl, msg)
		}
	}
}

func TestParseMemTotal(t *testing.T) {
	if got := parseMemTotal("MemTotal:        2030000 kB\nMemFree: 1 kB\n"); got != 2030000<<10 {
		t.Errorf("got %d", got)
	}
	if got := parseMemTotal("nothing\n"); got != 0 {
		t.Errorf("got %d", got)
	}
}

// A fake rdmactl: the runner's commands, the version check, an rdmactl without 'dev'.
func TestRunner(t *testing.T) {
	dir := t.TempDir()
	write := func(name, script string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", `case "$1" in
--version) echo "rdmactl 0.1.0";;
dev) cat testdata/rxe0.json;;
oci-hook) echo "  -l, --limit=KIND=N[,...]";;
esac
`)
	old := write("old", `case "$1" in
--version) echo "rdmactl 0.0.9";;
*) echo "rdmactl: unknown command '$1' (one of: 'cdi', 'export')" >&2; exit 2;;
esac
`)
	r := &Runner{Path: good}
	ctx := t.Context()
	if v, err := r.Version(ctx); err != nil || v != "0.1.0" {
		t.Errorf("version %q %v", v, err)
	}
	if inv, err := r.Inventory(ctx); err != nil || len(inv.Devices) != 1 {
		t.Errorf("inventory %v %v", inv, err)
	}
	if has, err := r.HookHasScope(ctx); err != nil || has {
		t.Errorf("scope %v %v", has, err)
	}
	r.Path = old
	_, err := r.Inventory(ctx)
	if err == nil || !strings.Contains(err.Error(), "has no 'dev' command") {
		t.Errorf("old rdmactl: %v", err)
	}
}
