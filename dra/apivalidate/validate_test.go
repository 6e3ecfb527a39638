// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause

package apivalidate

import (
	"encoding/json"
	"os"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/resource"
	_ "k8s.io/kubernetes/pkg/apis/resource/install"
	"k8s.io/kubernetes/pkg/apis/resource/validation"
	"k8s.io/utils/ptr"
)

func TestValidate(t *testing.T) {
	b, err := os.ReadFile("../internal/slice/testdata/devices.json")
	if err != nil {
		t.Fatal(err)
	}
	var all [][]resourcev1.Device
	if err := json.Unmarshal(b, &all); err != nil {
		t.Fatal(err)
	}
	for i, devs := range all {
		v1 := &resourcev1.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: "n1-rdmactl.io-abcde"},
			Spec: resourcev1.ResourceSliceSpec{Driver: "rdmactl.io", NodeName: ptr.To("n1"),
				Pool: resourcev1.ResourcePool{Name: "n1", ResourceSliceCount: 1}, Devices: devs},
		}
		var internal resource.ResourceSlice
		if err := legacyscheme.Scheme.Convert(v1, &internal, nil); err != nil {
			t.Fatal(err)
		}
		errs := validation.ValidateResourceSlice(&internal)
		for _, e := range errs {
			t.Errorf("config %d: %v", i, e)
		}
		t.Logf("config %d: %d errors, %d capacities", i, len(errs), len(devs[0].Capacity))
	}
}

// The validator does look: a hyphenated capacity name and a default above the range are refused.
func TestValidateRefuses(t *testing.T) {
	q := func(s string) *apiresource.Quantity { v := apiresource.MustParse(s); return &v }
	d := resourcev1.Device{Name: "rxe0", AllowMultipleAllocations: ptr.To(true), Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
		"mr-bytes": {Value: *q("1Gi")},
		"qp": {Value: *q("10"), RequestPolicy: &resourcev1.CapacityRequestPolicy{Default: q("11"),
			ValidRange: &resourcev1.CapacityRequestPolicyRange{Min: q("0"), Max: q("10")}}},
	}}
	v1 := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: resourcev1.ResourceSliceSpec{Driver: "rdmactl.io",
		NodeName: ptr.To("n1"), Pool: resourcev1.ResourcePool{Name: "n1", ResourceSliceCount: 1}, Devices: []resourcev1.Device{d}}}
	var internal resource.ResourceSlice
	if err := legacyscheme.Scheme.Convert(v1, &internal, nil); err != nil {
		t.Fatal(err)
	}
	errs := validation.ValidateResourceSlice(&internal)
	for _, e := range errs {
		t.Logf("refused: %v", e)
	}
	if len(errs) < 2 {
		t.Errorf("%d errors", len(errs))
	}
}
