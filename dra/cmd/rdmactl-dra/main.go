// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause

// rdmactl-dra is a Kubernetes DRA kubelet plugin: it publishes the node's RDMA devices with consumable
// capacities (qp, cq, mr, mr_bytes, ...) and gives each claim's containers the allocated device and the
// claim's budget as kernel limits (through the host's `rdmactl oci-hook`).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	"github.com/rdmactl/rdmactl/dra/internal/cdi"
	"github.com/rdmactl/rdmactl/dra/internal/driver"
	"github.com/rdmactl/rdmactl/dra/internal/node"
	"github.com/rdmactl/rdmactl/dra/internal/slice"
)

func main() {
	if err := run(); err != nil {
		klog.ErrorS(err, "rdmactl-dra stops")
		klog.Flush()
		os.Exit(1)
	}
}

func run() error {
	fs := flag.NewFlagSet("rdmactl-dra", flag.ExitOnError)
	klog.InitFlags(fs)
	var (
		driverName   = fs.String("driver-name", "rdmactl.io", "the DRA driver's name (DeviceClass selectors name it)")
		nodeName     = fs.String("node-name", os.Getenv("NODE_NAME"), "this node's name (default $NODE_NAME): the pool and ResourceSlice are its")
		kubeconfig   = fs.String("kubeconfig", "", "a kubeconfig file (default: the pod's service account)")
		registrarDir = fs.String("kubelet-registrar-dir", kubeletplugin.KubeletRegistryDir, "where the kubelet looks for plugin registration sockets")
		pluginDir    = fs.String("kubelet-plugin-dir", "", "the plugin's own socket directory (default /var/lib/kubelet/plugins/DRIVER-NAME)")
		cdiDir       = fs.String("cdi-dir", "/var/run/cdi", "where the claims' CDI specs are written (a directory the container runtime reads)")
		rdmactl      = fs.String("rdmactl", "/usr/local/bin/rdmactl", "the node's rdmactl, a host path")
		hostRoot     = fs.String("host-root", "", "the host's / as this process sees it (in a container: a hostPath mount of /); rdmactl runs chrooted there")
		hookRdmactl  = fs.String("hook-rdmactl", "", "the rdmactl the CDI hooks run, a host path (default: --rdmactl)")
		policy       = fs.String("policy", "", "the node policy file, a host path (default: rdmactl's, /etc/rdmactl/containers.conf)")
		devDir       = fs.String("dev-dir", "/dev/infiniband", "the host's uverbs and rdma_cm device directory")
		reserve      = fs.String("reserve", "", "kept back per kind for the node: KIND=N or KIND=P% (qp=64,mr_bytes=4Gi,cq=10%); capacity = device maximum - reserve")
		capacity     = fs.String("capacity", "", "the most published per kind: KIND=N or KIND=P% (after the reserve); also publishes ctx, xrcd or wq")
		hookScope    = fs.String("hook-scope", "auto", "pod: a claim is one budget for its pod's containers (needs oci-hook --scope); container: each container gets the claim's budget; auto: pod where rdmactl has it")
		refresh      = fs.Duration("refresh", time.Minute, "how often devices and policy are read again (0: never)")
		allowSkew    = fs.Bool("allow-version-skew", false, "run although the node's rdmactl differs from this driver in its major or minor version")
		showVersion  = fs.Bool("version", false, "print the version and exit")
	)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: rdmactl-dra [FLAGS]\nA DRA kubelet plugin for the node's RDMA devices (rdmactl %s).\n\n", node.DriverVersion)
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		os.Exit(2)
	}
	if *showVersion {
		fmt.Println("rdmactl-dra", node.DriverVersion)
		return nil
	}
	if *nodeName == "" {
		fmt.Fprintln(os.Stderr, "rdmactl-dra: --node-name (or $NODE_NAME) is required")
		os.Exit(2)
	}
	reserveAmt, err := slice.ParseAmounts(*reserve)
	if err != nil {
		fmt.Fprintf(os.Stderr, "rdmactl-dra: --reserve: %v\n", err)
		os.Exit(2)
	}
	capAmt, err := slice.ParseAmounts(*capacity)
	if err != nil {
		fmt.Fprintf(os.Stderr, "rdmactl-dra: --capacity: %v\n", err)
		os.Exit(2)
	}
	if *hookScope != "auto" && *hookScope != "pod" && *hookScope != "container" {
		fmt.Fprintf(os.Stderr, "rdmactl-dra: --hook-scope %q: auto, pod or container\n", *hookScope)
		os.Exit(2)
	}
	if *hookRdmactl == "" {
		*hookRdmactl = *rdmactl
	}
	if *pluginDir == "" {
		*pluginDir = filepath.Join(kubeletplugin.KubeletPluginsDir, *driverName)
	}

	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	logger := klog.FromContext(ctx)

	runner := &node.Runner{Path: *rdmactl, HostRoot: *hostRoot, Policy: *policy, Timeout: 30 * time.Second}
	inv, err := checkNode(ctx, runner, *hookRdmactl, *allowSkew)
	if err != nil {
		return err
	}
	podScope := *hookScope == "pod"
	if *hookScope == "auto" {
		hookRunner := *runner
		hookRunner.Path = *hookRdmactl
		podScope, err = hookRunner.HookHasScope(ctx)
		if err != nil {
			return err
		}
		if !podScope {
			logger.Info("WARNING: the node's rdmactl oci-hook has no --scope: a claim's budget holds each of its "+
				"containers, not their pod together (a pod of N containers sharing a claim may use N budgets)",
				"rdmactl", *hookRdmactl)
		}
	}
	cfg := driver.Config{
		DriverName: *driverName,
		NodeName:   *nodeName,
		CDIDir:     *cdiDir,
		HostRoot:   *hostRoot,
		DevDir:     *devDir,
		Hook:       cdi.HookConfig{Rdmactl: *hookRdmactl, Policy: *policy, PodScope: podScope},
		Slice:      slice.Config{Reserve: reserveAmt, Cap: capAmt, MemTotal: node.MemTotal(*hostRoot)},
		Refresh:    *refresh,
	}
	if err := os.MkdirAll(*pluginDir, 0o750); err != nil {
		return err
	}
	if err := os.MkdirAll(*cdiDir, 0o755); err != nil {
		return err
	}

	rc, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	drv := driver.New(cfg, runner, inv, cancel)
	helper, err := kubeletplugin.Start(ctx, drv,
		kubeletplugin.KubeClient(client),
		kubeletplugin.DriverName(*driverName),
		kubeletplugin.NodeName(*nodeName),
		kubeletplugin.RegistrarDirectoryPath(*registrarDir),
		kubeletplugin.PluginDataDirectoryPath(*pluginDir),
	)
	if err != nil {
		return fmt.Errorf("start the kubelet plugin: %w", err)
	}
	defer helper.Stop()
	drv.SetHelper(helper)
	if err := drv.Publish(ctx); err != nil {
		return fmt.Errorf("publish the ResourceSlice: %w", err)
	}
	logger.Info("rdmactl-dra runs", "version", node.DriverVersion, "node", *nodeName, "driver", *driverName,
		"cdiDir", *cdiDir, "rdmactl", *rdmactl, "hookScope", map[bool]string{true: "pod", false: "container"}[podScope])
	go drv.Run(ctx)
	<-ctx.Done()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	logger.Info("rdmactl-dra stops")
	return nil
}

// checkNode reads the node's devices and compares versions: the driver's, the JSON's, and the hook's rdmactl.
func checkNode(ctx context.Context, runner *node.Runner, hookPath string, allowSkew bool) (*node.Inventory, error) {
	logger := klog.FromContext(ctx)
	inv, err := runner.Inventory(ctx)
	if err != nil {
		return nil, err
	}
	versions := map[string]string{runner.Path + " dev -j": inv.Version}
	hookRunner := *runner
	hookRunner.Path = hookPath
	if v, err := hookRunner.Version(ctx); err != nil {
		return nil, fmt.Errorf("the hooks' rdmactl: %w", err)
	} else {
		versions[hookPath+" --version"] = v
	}
	var bad []string
	for what, v := range versions {
		skew, msg, err := node.CompareVersions(node.DriverVersion, v)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%s: %w", what, err)
		case skew == node.SkewIncompatible:
			bad = append(bad, what+": "+msg)
		case skew == node.SkewPatch:
			logger.Info("Version skew (patch level only)", "source", what, "detail", msg)
		}
	}
	if len(bad) > 0 {
		msg := strings.Join(bad, "; ")
		if !allowSkew {
			return nil, fmt.Errorf("version skew: %s (--allow-version-skew runs anyway)", msg)
		}
		logger.Info("WARNING: version skew, running anyway (--allow-version-skew)", "detail", msg)
	}
	logger.Info("The node's RDMA devices", "rdmactl", inv.Version, "devices", len(inv.Devices),
		"policy", inv.Policy.Path, "policyFound", inv.Policy.Found)
	return inv, nil
}
