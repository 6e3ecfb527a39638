// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause

// Package slice turns the node's devices and policy into the devices of a ResourceSlice: one device per
// RDMA device, shared (allowMultipleAllocations) with consumable capacities per resource kind (KEP-5075).
package slice

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/rdmactl/rdmactl/dra/internal/node"
)

// BaseKinds are published for every device; the policy may add the other kinds with a device maximum.
var BaseKinds = []string{"qp", "cq", "mr", "mr_bytes"}

// countable kinds with a device maximum (rdmactl dev's "max"), besides BaseKinds. "wr" is a per-QP depth cap,
// not an amount pods share: it is never a capacity (the hook applies the policy's wr as it is).
var extraKinds = map[string]bool{"pd": true, "srq": true, "ah": true, "mw": true}

// Amount is a reserve or a cap for one kind: a count (bytes for mr_bytes), or a percentage of the maximum.
type Amount struct {
	N       uint64
	Percent bool
}

// Of is the amount for a device maximum.
func (a Amount) Of(max uint64) uint64 {
	if !a.Percent {
		return a.N
	}
	return uint64(float64(max) * float64(a.N) / 100)
}

// ParseAmounts reads "qp=64,mr_bytes=4Gi,cq=10%" (kinds as rdmactl names them; a hyphen for an underscore is
// accepted; sizes in Kubernetes' quantity syntax or with rdmactl's K, M, G, T).
func ParseAmounts(s string) (map[string]Amount, error) {
	out := map[string]Amount{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		k, v, ok := strings.Cut(w, "=")
		k = strings.ReplaceAll(k, "-", "_")
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("%q: KIND=N or KIND=P%%", w)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%q: %s given twice", w, k)
		}
		if p, isPct := strings.CutSuffix(v, "%"); isPct {
			n, err := strconv.ParseUint(p, 10, 64)
			if err != nil || n > 100 {
				return nil, fmt.Errorf("%q: a percentage is 0%% to 100%%", w)
			}
			out[k] = Amount{N: n, Percent: true}
			continue
		}
		n, err := parseSize(v)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", w, err)
		}
		out[k] = Amount{N: n}
	}
	return out, nil
}

// parseSize takes 64, 4Gi, 4G (rdmactl's G is binary: 2^30, as in the node policy), 1e3.
func parseSize(v string) (uint64, error) {
	if n, err := strconv.ParseUint(v, 10, 64); err == nil {
		return n, nil
	}
	if len(v) > 1 {
		mult := map[byte]uint64{'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40}[v[len(v)-1]]
		if mult != 0 {
			n, err := strconv.ParseUint(v[:len(v)-1], 10, 64)
			if err == nil && n <= math.MaxUint64/mult {
				return n * mult, nil
			}
		}
	}
	q, err := resource.ParseQuantity(v)
	if err != nil || q.Sign() < 0 {
		return 0, fmt.Errorf("%q is not a whole number or a size", v)
	}
	i, ok := q.AsInt64()
	if !ok {
		return 0, fmt.Errorf("%q is not a whole number or a size", v)
	}
	return uint64(i), nil
}

// Config is what the node adds to the devices' maxima.
type Config struct {
	// Reserve per kind: kept back for the node (processes outside pods, the kernel); capacity = max - reserve.
	Reserve map[string]Amount
	// Cap per kind: the most a device publishes (after the reserve). A kind the device has no maximum for
	// (ctx, xrcd, wq) is published when it has a cap.
	Cap map[string]Amount
	// MemTotal bounds mr_bytes: a device's max_mr_size is the largest single MR, not a total; pinned memory
	// cannot exceed the node's memory. 0: not known.
	MemTotal uint64
}

var dnsLabelBad = regexp.MustCompile(`[^a-z0-9-]+`)

// DeviceName is the device's name in the slice: its ibdev as a DNS label ("mlx5_0" -> "mlx5-0").
func DeviceName(ibdev string) string {
	n := strings.Trim(dnsLabelBad.ReplaceAllString(strings.ToLower(ibdev), "-"), "-")
	if len(n) > 63 {
		n = strings.TrimRight(n[:63], "-")
	}
	if n == "" {
		n = "rdma"
	}
	return n
}

// Capacity is what one kind of one device publishes (in rdmactl's units: a count, or bytes).
type Capacity struct {
	Kind    string
	Value   uint64 // device maximum less the reserve, within the cap
	Default uint64 // what a request that does not name the kind consumes
	Max     uint64 // the most a request may ask (the policy's ceiling, within Value)
}

// Kinds are the capacities a device publishes: BaseKinds, the kinds the policy names that have a device
// maximum, and the kinds with a cap; sorted.
func Kinds(d *node.Device, pol *node.Policy, cfg *Config) []string {
	set := map[string]bool{}
	for _, k := range BaseKinds {
		set[k] = true
	}
	for k := range pol.Kinds() {
		if _, ok := d.Max[k]; ok && extraKinds[k] {
			set[k] = true
		}
	}
	for k := range cfg.Cap {
		if k != "wr" {
			set[k] = true
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Capacities computes each kind's capacity and request policy:
//   - Value: the device's maximum (mr_bytes: the node's memory, or max_mr_size if smaller) less the reserve,
//     at most the cap;
//   - Default: the policy's default, else its ceiling, else Value (what the hook would give a container
//     that asks nothing: the default, else the ceiling, else no limit, i.e. the whole device);
//   - Max: the policy's ceiling, else Value.
//
// All are within Value, and Default within Max, as the API requires.
func Capacities(d *node.Device, pol *node.Policy, cfg *Config) []Capacity {
	var out []Capacity
	for _, k := range Kinds(d, pol, cfg) {
		max, hasMax := d.Max[k]
		if k == "mr_bytes" && cfg.MemTotal > 0 && (!hasMax || cfg.MemTotal < max) {
			max, hasMax = cfg.MemTotal, true
		}
		c := Capacity{Kind: k}
		bounded := hasMax
		if hasMax {
			c.Value = max
			if r, ok := cfg.Reserve[k]; ok {
				rv := r.Of(max)
				if rv >= c.Value {
					c.Value = 0
				} else {
					c.Value -= rv
				}
			}
		} else {
			c.Value = math.MaxUint64
		}
		if cp, ok := cfg.Cap[k]; ok {
			if !hasMax && cp.Percent {
				continue // a percentage of no maximum
			}
			c.Value, bounded = min(c.Value, cp.Of(max)), true
		}
		if !bounded {
			continue // no maximum and no cap: nothing to publish
		}
		c.Value = min(c.Value, math.MaxInt64) // a Quantity holds an int64
		c.Max = c.Value
		if v, ok := pol.Ceiling[k]; ok && uint64(v) != node.Unlimited {
			c.Max = min(c.Max, uint64(v))
		}
		c.Default = c.Max
		if v, ok := pol.Default[k]; ok && uint64(v) != node.Unlimited {
			c.Default = min(c.Default, uint64(v))
		}
		out = append(out, c)
	}
	return out
}

func quantity(kind string, v uint64) resource.Quantity {
	if kind == "mr_bytes" {
		return *resource.NewQuantity(int64(v), resource.BinarySI)
	}
	return *resource.NewQuantity(int64(v), resource.DecimalSI)
}

// Device is one RDMA device as a ResourceSlice device.
func Device(d *node.Device, pol *node.Policy, cfg *Config) resourceapi.Device {
	attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		"ibdev":    {StringValue: ptr.To(d.IBDev)},
		"firmware": {StringValue: ptr.To(d.Firmware)},
	}
	if d.PCIAddress != "" {
		attrs["pciAddress"] = resourceapi.DeviceAttribute{StringValue: ptr.To(d.PCIAddress)}
	}
	if d.NUMANode != nil {
		attrs["numaNode"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(*d.NUMANode))}
	}
	// the first port with a RoCE v2 IPv4 GID, else the first port
	var p *node.Port
	for i := range d.Ports {
		if d.Ports[i].RoCEv2IPv4GID != nil {
			p = &d.Ports[i]
			break
		}
	}
	if p == nil && len(d.Ports) > 0 {
		p = &d.Ports[0]
	}
	if p != nil {
		if p.LinkLayer != "" {
			attrs["linkLayer"] = resourceapi.DeviceAttribute{StringValue: ptr.To(p.LinkLayer)}
		}
		if p.Netdev != "" {
			attrs["netdev"] = resourceapi.DeviceAttribute{StringValue: ptr.To(p.Netdev)}
		}
		if p.RoCEv2IPv4GID != nil {
			attrs["roceV2IPv4GID"] = resourceapi.DeviceAttribute{StringValue: ptr.To(p.RoCEv2IPv4GID.GID)}
		}
	}
	capacity := map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{}
	for _, c := range Capacities(d, pol, cfg) {
		capacity[resourceapi.QualifiedName(c.Kind)] = resourceapi.DeviceCapacity{
			Value: quantity(c.Kind, c.Value),
			RequestPolicy: &resourceapi.CapacityRequestPolicy{
				Default: ptr.To(quantity(c.Kind, c.Default)),
				ValidRange: &resourceapi.CapacityRequestPolicyRange{
					Min: ptr.To(quantity(c.Kind, 0)),
					Max: ptr.To(quantity(c.Kind, c.Max)),
				},
			},
		}
	}
	return resourceapi.Device{
		Name:                     DeviceName(d.IBDev),
		Attributes:               attrs,
		Capacity:                 capacity,
		AllowMultipleAllocations: ptr.To(true),
	}
}

// Devices are the slice's devices, one per RDMA device, in the inventory's order. Two ibdevs with the same
// DNS-label name would clash: the second is left out, and named in the error.
func Devices(inv *node.Inventory, cfg *Config) ([]resourceapi.Device, error) {
	var out []resourceapi.Device
	seen := map[string]string{}
	var errs []string
	for i := range inv.Devices {
		d := &inv.Devices[i]
		dev := Device(d, inv.Policy, cfg)
		if other, dup := seen[dev.Name]; dup {
			errs = append(errs, fmt.Sprintf("%s and %s are both %q in the slice: %s left out", other, d.IBDev,
				dev.Name, d.IBDev))
			continue
		}
		seen[dev.Name] = d.IBDev
		out = append(out, dev)
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return out, nil
}
