// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause

// Package driver is the kubelet plugin: it publishes the node's RDMA devices in a ResourceSlice and answers
// NodePrepareResources with CDI devices whose hooks put each claim's budget on its containers' cgroups.
package driver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"

	"github.com/rdmactl/rdmactl/dra/internal/cdi"
	"github.com/rdmactl/rdmactl/dra/internal/node"
	"github.com/rdmactl/rdmactl/dra/internal/slice"
)

// Config is the driver's configuration (main's flags).
type Config struct {
	DriverName string
	NodeName   string
	// CDIDir is where claim specs are written (as the driver sees it; the runtime reads the same directory).
	CDIDir string
	// HostRoot is the host's root as the driver sees it ("" or "/": the driver runs on the host).
	HostRoot string
	// DevDir is the host's /dev/infiniband (a host path: the specs name it).
	DevDir string
	Hook   cdi.HookConfig
	Slice  slice.Config
	// Refresh is how often the devices and the policy are read again (and the slice republished if changed).
	Refresh time.Duration
}

// Driver implements kubeletplugin.DRAPlugin.
type Driver struct {
	cfg    Config
	runner *node.Runner
	cancel context.CancelCauseFunc

	mu        sync.Mutex
	inv       *node.Inventory
	published []resourceapi.Device
	helper    *kubeletplugin.Helper
}

// New makes a driver around an inventory already read (main checks versions first).
func New(cfg Config, runner *node.Runner, inv *node.Inventory, cancel context.CancelCauseFunc) *Driver {
	return &Driver{cfg: cfg, runner: runner, inv: inv, cancel: cancel}
}

// SetHelper gives the driver the helper to publish through.
func (d *Driver) SetHelper(h *kubeletplugin.Helper) {
	d.mu.Lock()
	d.helper = h
	d.mu.Unlock()
}

// Publish builds the slice from the current inventory and hands it to the helper when it changed.
func (d *Driver) Publish(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	devs, err := slice.Devices(d.inv, &d.cfg.Slice)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Some RDMA devices are not published")
	}
	if d.published != nil && reflect.DeepEqual(devs, d.published) {
		return nil
	}
	res := resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		d.cfg.NodeName: {Slices: []resourceslice.Slice{{Devices: devs}}},
	}}
	if err := d.helper.PublishResources(ctx, res); err != nil {
		return err
	}
	if devs == nil {
		devs = []resourceapi.Device{}
	}
	d.published = devs
	names := make([]string, 0, len(devs))
	for _, x := range devs {
		names = append(names, x.Name)
	}
	klog.FromContext(ctx).Info("Published the node's RDMA devices", "pool", d.cfg.NodeName, "devices", names)
	return nil
}

// Run reads the devices and the policy again every cfg.Refresh and republishes what changed, until ctx ends.
func (d *Driver) Run(ctx context.Context) {
	if d.cfg.Refresh <= 0 {
		<-ctx.Done()
		return
	}
	t := time.NewTicker(d.cfg.Refresh)
	defer t.Stop()
	logger := klog.FromContext(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		inv, err := d.runner.Inventory(ctx)
		if err != nil {
			logger.Error(err, "Cannot read the node's RDMA devices; the slice stays as it was")
			continue
		}
		d.mu.Lock()
		d.inv = inv
		d.mu.Unlock()
		if err := d.Publish(ctx); err != nil {
			logger.Error(err, "Cannot publish the node's RDMA devices")
		}
	}
}

func (d *Driver) hostPath(p string) string {
	if d.cfg.HostRoot == "" || d.cfg.HostRoot == "/" {
		return p
	}
	return filepath.Join(d.cfg.HostRoot, p)
}

// PrepareResourceClaims writes each claim's CDI spec and answers its CDI device ids.
func (d *Driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, c := range claims {
		devs, err := d.prepare(ctx, c)
		out[c.UID] = kubeletplugin.PrepareResult{Devices: devs, Err: err}
		if err != nil {
			klog.FromContext(ctx).Error(err, "Claim not prepared", "claim", klog.KObj(c))
		}
	}
	return out, nil
}

func (d *Driver) prepare(ctx context.Context, c *resourceapi.ResourceClaim) ([]kubeletplugin.Device, error) {
	results, err := Results(c, d.cfg.DriverName, d.cfg.NodeName)
	if err != nil {
		return nil, err
	}
	limits, _, err := Budget(results, d.cfg.DriverName)
	if err != nil {
		return nil, fmt.Errorf("claim %s/%s: %w", c.Namespace, c.Name, err)
	}
	d.mu.Lock()
	inv := d.inv
	d.mu.Unlock()
	byName := map[string]*node.Device{}
	for i := range inv.Devices {
		byName[slice.DeviceName(inv.Devices[i].IBDev)] = &inv.Devices[i]
	}
	cm := filepath.Join(d.cfg.DevDir, "rdma_cm")
	_, cmErr := os.Stat(d.hostPath(cm))
	var allocs []cdi.Alloc
	seen := map[string]bool{}
	var devs []kubeletplugin.Device
	for _, r := range results {
		nd := byName[r.Device]
		if nd == nil {
			return nil, fmt.Errorf("claim %s/%s: device %s is not on this node now (rdmactl dev does not list it)",
				c.Namespace, c.Name, r.Device)
		}
		if !seen[r.Device] {
			seen[r.Device] = true
			a := cdi.Alloc{Device: r.Device, Nodes: []string{filepath.Join(d.cfg.DevDir, filepath.Base(nd.Uverbs))},
				Env: []string{"RDMACTL_DRA_IBDEV_" + envName(r.Device) + "=" + nd.IBDev}}
			if cmErr == nil {
				a.Nodes = append(a.Nodes, cm)
			}
			allocs = append(allocs, a)
		}
		devs = append(devs, kubeletplugin.Device{
			Requests:     []string{r.Request},
			PoolName:     r.Pool,
			DeviceName:   r.Device,
			CDIDeviceIDs: []string{cdi.ID(string(c.UID), r.Device)},
			ShareID:      r.ShareID,
		})
	}
	if len(allocs) == 0 {
		return devs, nil
	}
	spec := cdi.ClaimSpec(string(c.UID), allocs, limits, &d.cfg.Hook)
	if err := cdi.Write(d.cfg.CDIDir, string(c.UID), spec); err != nil {
		return nil, fmt.Errorf("claim %s/%s: CDI spec: %w", c.Namespace, c.Name, err)
	}
	klog.FromContext(ctx).Info("Prepared", "claim", klog.KObj(c), "devices", len(allocs), "budget", cdi.Limits(limits),
		"spec", cdi.FileName(d.cfg.CDIDir, string(c.UID)))
	return devs, nil
}

// envName makes a device name usable in an environment variable's name.
func envName(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z':
			b[i] = c - 'a' + 'A'
		case (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'):
		default:
			b[i] = '_'
		}
	}
	return string(b)
}

// UnprepareResourceClaims removes the claims' CDI specs (the hooks' poststop took the limits off).
func (d *Driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := make(map[types.UID]error, len(claims))
	for _, c := range claims {
		err := cdi.Remove(d.cfg.CDIDir, string(c.UID))
		out[c.UID] = err
		if err == nil {
			klog.FromContext(ctx).Info("Unprepared", "claim", c.NamespacedName, "uid", c.UID)
		}
	}
	return out, nil
}

// HandleError logs background errors; one that retrying cannot mend stops the driver.
func (d *Driver) HandleError(ctx context.Context, err error, msg string) {
	klog.FromContext(ctx).Error(err, msg)
	if !errors.Is(err, kubeletplugin.ErrRecoverable) && d.cancel != nil {
		d.cancel(fmt.Errorf("fatal background error: %s: %w", msg, err))
	}
}
