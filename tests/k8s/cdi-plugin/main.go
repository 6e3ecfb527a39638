// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// lab-cdi-plugin: a kubelet device plugin for the lab's tests only: it offers each RDMA device of the node
// as SHARES devices of one extended resource and answers Allocate with the CDI id of `rdmactl cdi generate`
// (rdmactl.io/hca=IBDEV), so that a pod reaches rdmactl's CDI spec through the kubelet and containerd
// without the DRA driver. No budget, no accounting: that is rdmactl-dra's.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/klog/v2"
	api "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

type plugin struct {
	api.UnimplementedDevicePluginServer
	devices []*api.Device
	kind    string
}

func (p *plugin) GetDevicePluginOptions(context.Context, *api.Empty) (*api.DevicePluginOptions, error) {
	return &api.DevicePluginOptions{}, nil
}

// ListAndWatch sends the list once and holds the stream: the lab's devices do not change while it runs.
func (p *plugin) ListAndWatch(_ *api.Empty, s grpc.ServerStreamingServer[api.ListAndWatchResponse]) error {
	if err := s.Send(&api.ListAndWatchResponse{Devices: p.devices}); err != nil {
		return err
	}
	<-s.Context().Done()
	return nil
}

func (p *plugin) GetPreferredAllocation(context.Context, *api.PreferredAllocationRequest) (*api.PreferredAllocationResponse, error) {
	return &api.PreferredAllocationResponse{}, nil
}

// Allocate: a share ID is IBDEV/N; each container gets the CDI device of every IBDEV it was given, once.
func (p *plugin) Allocate(_ context.Context, req *api.AllocateRequest) (*api.AllocateResponse, error) {
	resp := &api.AllocateResponse{}
	for _, c := range req.ContainerRequests {
		seen := map[string]bool{}
		r := &api.ContainerAllocateResponse{}
		for _, id := range c.DevicesIds {
			dev, _, _ := strings.Cut(id, "/")
			if seen[dev] {
				continue
			}
			seen[dev] = true
			r.CdiDevices = append(r.CdiDevices, &api.CDIDevice{Name: p.kind + "=" + dev})
		}
		klog.InfoS("allocate", "devices", c.DevicesIds, "cdi", r.CdiDevices)
		resp.ContainerResponses = append(resp.ContainerResponses, r)
	}
	return resp, nil
}

func (p *plugin) PreStartContainer(context.Context, *api.PreStartContainerRequest) (*api.PreStartContainerResponse, error) {
	return &api.PreStartContainerResponse{}, nil
}

func main() {
	dir := flag.String("dir", api.DevicePluginPath, "the kubelet's device-plugins directory")
	resource := flag.String("resource", "lab.rdmactl.io/hca", "the extended resource offered")
	kind := flag.String("cdi-kind", "rdmactl.io/hca", "the CDI kind of the devices answered")
	shares := flag.Int("shares", 8, "devices offered per RDMA device")
	sysfs := flag.String("sysfs", "/sys/class/infiniband", "where the RDMA devices are listed")
	klog.InitFlags(nil)
	flag.Parse()
	if err := run(*dir, *resource, *kind, *shares, *sysfs); err != nil {
		fmt.Fprintf(os.Stderr, "lab-cdi-plugin: %v\n", err)
		os.Exit(1)
	}
}

func run(dir, resource, kind string, shares int, sysfs string) error {
	ents, err := os.ReadDir(sysfs)
	if err != nil {
		return fmt.Errorf("listing RDMA devices: %w", err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	p := &plugin{kind: kind}
	for _, n := range names {
		for i := 0; i < shares; i++ {
			p.devices = append(p.devices, &api.Device{ID: fmt.Sprintf("%s/%d", n, i), Health: api.Healthy})
		}
	}
	if len(p.devices) == 0 {
		return fmt.Errorf("no RDMA device in %s", sysfs)
	}

	endpoint := "lab-cdi-plugin.sock"
	sock := filepath.Join(dir, endpoint)
	_ = os.Remove(sock)
	l, err := net.Listen("unix", sock)
	if err != nil {
		return err
	}
	srv := grpc.NewServer()
	api.RegisterDevicePluginServer(srv, p)
	go func() { _ = srv.Serve(l) }()
	defer srv.Stop()

	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, "kubelet.sock"),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := api.NewRegistrationClient(conn).Register(ctx, &api.RegisterRequest{
		Version: api.Version, Endpoint: endpoint, ResourceName: resource, Options: &api.DevicePluginOptions{},
	}); err != nil {
		return fmt.Errorf("registering with the kubelet: %w", err)
	}
	klog.InfoS("registered", "resource", resource, "devices", len(p.devices), "cdi", kind)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	return nil
}
