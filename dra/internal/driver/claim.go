// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause

package driver

import (
	"fmt"
	"sort"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
)

// Results are the allocation results of a claim that are this driver's, on this node's pool.
func Results(claim *resourceapi.ResourceClaim, driverName, pool string) ([]resourceapi.DeviceRequestAllocationResult, error) {
	if claim.Status.Allocation == nil {
		return nil, fmt.Errorf("claim %s/%s is not allocated", claim.Namespace, claim.Name)
	}
	var out []resourceapi.DeviceRequestAllocationResult
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver != driverName {
			continue
		}
		if r.Pool != pool {
			return nil, fmt.Errorf("claim %s/%s: device %s is in pool %s, not this node's (%s)", claim.Namespace,
				claim.Name, r.Device, r.Pool, pool)
		}
		out = append(out, r)
	}
	return out, nil
}

// Budget is a claim's budget, per kind (rdmactl's kind names): the sum over its results of the capacity the
// scheduler had them consume. Results without consumed capacity (DRAConsumableCapacity off: the device was
// allocated whole) add nothing; ok is false when none had any, and the hook then applies the node's policy
// alone.
func Budget(results []resourceapi.DeviceRequestAllocationResult, driverName string) (limits map[string]uint64, ok bool, err error) {
	limits = map[string]uint64{}
	for _, r := range results {
		if r.ConsumedCapacity != nil {
			ok = true
		}
		// a stable order for the error messages
		names := make([]string, 0, len(r.ConsumedCapacity))
		for n := range r.ConsumedCapacity {
			names = append(names, string(n))
		}
		sort.Strings(names)
		for _, n := range names {
			q := r.ConsumedCapacity[resourceapi.QualifiedName(n)]
			kind := strings.TrimPrefix(n, driverName+"/")
			if strings.Contains(kind, "/") {
				continue // another domain's capacity: not a kind of rdmactl's
			}
			v, exact := q.AsInt64()
			if !exact {
				v = q.Value() // a fraction: rounded up
			}
			if v < 0 {
				return nil, false, fmt.Errorf("device %s: consumed %s is negative (%s)", r.Device, n, q.String())
			}
			limits[kind] += uint64(v)
		}
	}
	if !ok {
		return nil, false, nil
	}
	return limits, true, nil
}
