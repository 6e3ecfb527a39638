# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdmactl: build, install, tests and the soft-RoCE lab.

VERSION     ?= 0.1.0
PREFIX      ?= /usr/local
DESTDIR     ?=
BINDIR      ?= $(PREFIX)/bin
LIBDIR      ?= $(PREFIX)/lib
MANDIR      ?= $(PREFIX)/share/man
BASH_COMPDIR ?= $(PREFIX)/share/bash-completion/completions
# Where the engines look: Slurm's plugin directory (Debian's slurm-wlm), the OCI hooks.d of podman and CRI-O,
# for a PREFIX of the system (/usr, /usr/local); under any other (PREFIX=$HOME/.local) they follow PREFIX, so
# that make install writes nothing outside it (copy them where the engines look, or set these two).
SYSTEM_PREFIX := $(filter /usr /usr/ /usr/local /usr/local/,$(PREFIX))
SLURM_PLUGINDIR ?= $(if $(SYSTEM_PREFIX),/usr/lib/x86_64-linux-gnu/slurm-wlm,$(PREFIX)/lib/slurm-wlm)
OCI_HOOKSDIR ?= $(if $(SYSTEM_PREFIX),/usr/share/containers/oci/hooks.d,$(PREFIX)/share/containers/oci/hooks.d)

ifeq ($(SANITIZE),1)
OUT         ?= build-san
else
OUT         ?= build
endif
# Tests find the binaries through BUILD (tests/helper.bash), also inside the lab.
export BUILD := $(abspath $(OUT))

CC          ?= gcc
CLANG       ?= clang
BPFTOOL     ?= bpftool
# extra clang flags for bpf/*.bpf.c (experiments: variants of the probes built side by side with OUT=)
BPF_CFLAGS  ?=
SANITIZE    ?=
FUZZ_SECONDS ?= 20
# make check's fuzzing: each harness this long (CI's time is bounded; make check-fuzz runs FUZZ_SECONDS)
CHECK_FUZZ_SECONDS ?= 5

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

CFLAGS_BASE := -std=gnu11 -O2 -g -Wall -Wextra -Werror -fPIC -D_GNU_SOURCE \
	-DRDMACTL_VERSION='"$(VERSION)"' -Ilib -I$(OUT) -MMD -MP
ifeq ($(SANITIZE),1)
CFLAGS_BASE += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS_SAN := -fsanitize=address,undefined
# The preload runs inside foreign processes: it is never built with ASan (it cannot be preloaded into an
# unsanitized program), only with UBSan's minimal runtime-free checks.
PRELOAD_SAN := -fsanitize=undefined -fsanitize-undefined-trap-on-error
endif
override CFLAGS := $(CFLAGS_BASE) $(CFLAGS)

LIBS_CMD := -libverbs -lrdmacm -lmnl -lncursesw -lbpf -lelf -lz -lpthread -lrt
# json-c is the tests' oracle for the output layer's JSON (the programs themselves do not use it).
LIBS_TEST := $(LIBS_CMD) -ljson-c
LIBS_PRELOAD := -ldl -lpthread -lrt

# lib/ is three libraries: the core the preload links (kinds, ledger, /proc readers, parsing), everything else
# the commands share, and the monitor's BPF loader, the one object that needs the BPF skeleton (clang).
CORE_SRC    := lib/core/kinds.c $(wildcard lib/ledger/*.c) lib/core/proc.c lib/core/util.c
BPFLIB_SRC  := lib/monitor/bpfmon.c lib/kq/kq.c lib/kq/kqload.c lib/kq/backstop.c
LIB_SRC     := $(filter-out $(BPFLIB_SRC),$(wildcard lib/*/*.c))
CMD_SRC     := $(wildcard cmd/*.c)
PRELOAD_SRC := $(wildcard preload/*.c)
UNIT_SRC    := $(wildcard tests/unit/test_*.c)
BENCH_SRC   := $(wildcard bench/*.c)
FUZZ_SRC    := $(wildcard tests/fuzz/fuzz_*.c)
BPF_SRC     := $(wildcard bpf/*.bpf.c)
LIB_OBJ     := $(LIB_SRC:%.c=$(OUT)/%.o)
BPFLIB_OBJ  := $(BPFLIB_SRC:%.c=$(OUT)/%.o)
CMD_OBJ     := $(CMD_SRC:%.c=$(OUT)/%.o)
PRELOAD_OBJ := $(PRELOAD_SRC:%.c=$(OUT)/preload-obj/%.o)
UNIT_BIN    := $(UNIT_SRC:tests/unit/%.c=$(OUT)/tests/%)
BENCH_BIN   := $(BENCH_SRC:bench/%.c=$(OUT)/bench/%)
FUZZ_BIN    := $(FUZZ_SRC:tests/fuzz/%.c=$(OUT)/fuzz/%)
BPF_SKEL    := $(BPF_SRC:bpf/%.bpf.c=$(OUT)/%.skel.h)
LAB_HELPERS := $(patsubst tests/lab/progs/%.c,$(OUT)/lab-progs/%,$(wildcard tests/lab/progs/*.c))
LAB_HELPERS += $(OUT)/lab-progs/kqverbs-static $(OUT)/lab-progs/kqcompat32

MANPAGES    := $(wildcard man/*.8)

# The Slurm SPANK plugin, where Slurm's headers are (libslurm-dev). SPANK=1 requires them (the Debian package:
# its plugin never depends on what the build machine happens to have), SPANK=0 leaves the plugin out.
SPANK       ?=
SPANK_H     := $(if $(filter 0,$(SPANK)),,$(wildcard /usr/include/slurm/spank.h))
ifeq ($(SPANK)$(SPANK_H),1)
$(error SPANK=1: no /usr/include/slurm/spank.h to build the Slurm plugin with (apt-get install libslurm-dev))
endif
SPANK_SO    := $(if $(SPANK_H),$(OUT)/spank_rdmactl.so)

.DELETE_ON_ERROR:
# Keep the BPF chain (vmlinux.h, .bpf.o) between builds.
.SECONDARY:
.PHONY: all installed deps check check-host check-unit check-bats check-lab check-fuzz demo lab install uninstall clean help bench

# What make install (and the Debian package) installs; all adds the lab's helper programs.
INSTALLED   := $(OUT)/rdmactl $(OUT)/librdmactl-preload.so $(SPANK_SO) $(OUT)/oci-hooks/rdmactl.json
all: $(INSTALLED) $(LAB_HELPERS)

installed: $(INSTALLED)

help:
	@echo "Targets:"
	@echo "  all (default)  build $(OUT)/rdmactl, $(OUT)/librdmactl-preload.so and the lab's helper programs"
	@echo "  installed      only what make install installs (the Debian package builds this)"
	@echo "  deps           install the Debian packages the build, the tests and the lab need (root)"
	@echo "  check          deps + build + host tests (unit, CLI, fuzz, the Go driver's go vet/test) + lab tests in the soft-RoCE lab"
	@echo "                 (the host tests in the last of the LAB_JOBS lanes, before its lab runs)"
	@echo "  check-host     host tests only: check-unit, check-fuzz, check-bats"
	@echo "  check-unit     C unit tests of lib/ (tests/unit); T=SUITE[:CASE] runs one: T=ledger, T=ledger:basic"
	@echo "  check-bats     host CLI suites (tests/*.bats); S=SUITE... picks files (S=quota), F=REGEX test names"
	@echo "  check-fuzz     libFuzzer harnesses (tests/fuzz) for FUZZ_SECONDS=$(FUZZ_SECONDS) each (make check: CHECK_FUZZ_SECONDS=$(CHECK_FUZZ_SECONDS))"
	@echo "  check-lab      lab suites (tests/lab/*.bats) in the soft-RoCE VM, once per kernel of LAB_KERNELS;"
	@echo "                 F=REGEX picks suites by file name (F=run), LAB_FILTER=REGEX tests by name"
	@echo "  demo           boot the lab and run a narrated tour of rdmactl"
	@echo "  lab            interactive shell inside the lab (rxe0 on veth0, 192.0.2.1/24)"
	@echo "  bench          build the benchmarks under $(OUT)/bench (run bench/*.sh; see their headers)"
	@echo "  install        install binary, preload, man pages, bash completion, the OCI hooks.d file and (with"
	@echo "                 slurm/spank.h) the Slurm plugin (PREFIX DESTDIR MANDIR BASH_COMPDIR OCI_HOOKSDIR SLURM_PLUGINDIR;"
	@echo "                 SPANK=1 requires slurm/spank.h, SPANK=0 leaves the plugin out)"
	@echo "                 also systemd units, alerting rules, dashboard (SYSTEMDUNITDIR, DISTDATADIR)"
	@echo "  deb            the Debian package (debian/) in $(OUT).deb/, checked by lintian"
	@echo "  uninstall, clean"
	@echo "Variables: V=1 (show commands)  SANITIZE=1 (ASan+UBSan)  OUT=$(OUT)  PREFIX=$(PREFIX)"
	@echo "           LAB_KERNELS=\"$(LAB_KERNELS)\" (kernels check-lab boots: stable, backports)"
	@echo "           LAB_JOBS=$(LAB_JOBS) (lab runs check-lab makes at once: tests/lab/check-all --list shows them)"
	@echo "           LAB_GROUPS=\"$(LAB_GROUPS)\" (one lab run per group of suites and kernel)  CHECK_JOBS=$(CHECK_JOBS)"
	@echo "Tests by name: tests/README.md, e.g. make check-bats S=quota F='fresh host'"

deps:
	$(Q)tests/deps.sh

# --- for operators (dist/): systemd units, Prometheus rules, Grafana dashboard; the Debian package -----
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
DISTDATADIR ?= $(PREFIX)/share/rdmactl
DIST_UNITS  := $(patsubst dist/systemd/%.in,%,$(wildcard dist/systemd/*.service.in))
.PHONY: install-dist uninstall-dist deb
install: install-dist
uninstall: uninstall-dist

# The units name the rdmactl of BINDIR.
install-dist:
	install -d $(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(DISTDATADIR)/prometheus $(DESTDIR)$(DISTDATADIR)/grafana
	for u in $(DIST_UNITS); do sed 's|@BINDIR@|$(BINDIR)|g' dist/systemd/$$u.in > $(DESTDIR)$(SYSTEMDUNITDIR)/$$u \
		&& chmod 644 $(DESTDIR)$(SYSTEMDUNITDIR)/$$u || exit 1; done
	install -m 644 dist/prometheus/rdmactl.rules.yml $(DESTDIR)$(DISTDATADIR)/prometheus/
	install -m 644 dist/grafana/rdmactl.json $(DESTDIR)$(DISTDATADIR)/grafana/

uninstall-dist:
	rm -f $(addprefix $(DESTDIR)$(SYSTEMDUNITDIR)/,$(DIST_UNITS))
	rm -rf $(DESTDIR)$(DISTDATADIR)

# make deb: the tree as it is (tracked and new files, not the ignored ones) copied to $(DEBDIR)/src and built
# there by dpkg-buildpackage (debian/); the packages land in $(DEBDIR)/, lintian must find no error. DEBDIR is
# beside OUT, not in it (make reads every *.d under OUT).
DEBDIR      ?= $(OUT).deb
deb:
	$(Q)rm -rf $(DEBDIR) && mkdir -p $(DEBDIR)/src
	$(Q)git ls-files -z -c -o --exclude-standard | xargs -0 sh -c 'for f; do [ -e "$$f" ] && printf "%s\0" "$$f"; done' sh \
		| tar --null -T - -cf - | tar -xf - -C $(DEBDIR)/src
	$(Q)cd $(DEBDIR)/src && DEB_BUILD_OPTIONS="$${DEB_BUILD_OPTIONS:-noddebs}" dpkg-buildpackage -us -uc -b
	$(Q)lintian --fail-on error $(DEBDIR)/*.changes
	$(Q)ls $(DEBDIR)/*.deb

$(OUT) $(OUT)/lib $(OUT)/cmd $(OUT)/preload-obj/preload $(OUT)/tests $(OUT)/bench $(OUT)/fuzz $(OUT)/bpf $(OUT)/lab-progs:
	$(Q)mkdir -p $@

# --- BPF: vmlinux.h -> .bpf.o -> skeleton ---------------------------------------------------------
$(OUT)/vmlinux.h: | $(OUT)
	$(call msg,GEN,$@)
	$(Q)if [ -r /sys/kernel/btf/vmlinux ]; then $(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@; \
	else echo "no /sys/kernel/btf/vmlinux: cannot generate vmlinux.h" >&2; exit 1; fi

$(OUT)/bpf/%.bpf.o: bpf/%.bpf.c $(OUT)/vmlinux.h | $(OUT)/bpf
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_x86 $(BPF_CFLAGS) -I$(OUT) -Ibpf -Ilib -MMD -MP -c $< -o $@
	$(Q)$(BPFTOOL) gen object $@.linked $@ && mv $@.linked $@ || true

$(OUT)/%.skel.h: $(OUT)/bpf/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

# --- C ----------------------------------------------------------------------------------------------
$(OUT)/lib/%.o: lib/%.c | $(OUT)/lib
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@) && $(CC) $(CFLAGS) -c $< -o $@

# Each loader waits for its own skeleton.
$(OUT)/lib/monitor/bpfmon.o: | $(OUT)/restrack.skel.h
$(OUT)/lib/kq/kqload.o: | $(OUT)/kq.skel.h

$(OUT)/cmd/%.o: cmd/%.c | $(OUT)/cmd
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -Icmd -c $< -o $@

$(OUT)/librdmactl.a: $(LIB_OBJ)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(OUT)/rdmactl: $(CMD_OBJ) $(BPFLIB_OBJ) $(OUT)/librdmactl.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS_SAN) $(LDFLAGS) -o $@ $(CMD_OBJ) $(BPFLIB_OBJ) $(OUT)/librdmactl.a $(LIBS_CMD)

# The preload gets its own objects: no ASan, hidden visibility, only the wrappers exported.
PRELOAD_CFLAGS := $(filter-out -fsanitize=% -fno-sanitize-recover=%,$(CFLAGS)) $(PRELOAD_SAN) -fvisibility=hidden
PRELOAD_LIB_OBJ := $(CORE_SRC:%.c=$(OUT)/preload-obj/%.o)

$(OUT)/preload-obj/%.o: %.c | $(OUT)/preload-obj/preload
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@) && $(CC) $(PRELOAD_CFLAGS) -DRDMACTL_PRELOAD -c $< -o $@

$(OUT)/preload-obj/librdmactl-preload.a: $(PRELOAD_LIB_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

# Lab programs play applications and also read netlink: all of lib/ (but the BPF loader), built like the preload.
$(OUT)/preload-obj/librdmactl-app.a: $(LIB_SRC:%.c=$(OUT)/preload-obj/%.o)
	$(Q)rm -f $@ && ar rcs $@ $^

$(OUT)/librdmactl-preload.so: $(PRELOAD_OBJ) $(OUT)/preload-obj/librdmactl-preload.a preload/preload.map
	$(call msg,LINK,$@)
	$(Q)$(CC) -shared $(PRELOAD_SAN) -Wl,--version-script=preload/preload.map -Wl,-z,defs -o $@ \
		$(PRELOAD_OBJ) $(OUT)/preload-obj/librdmactl-preload.a $(LIBS_PRELOAD)

$(OUT)/tests/%: tests/unit/%.c $(OUT)/librdmactl.a | $(OUT)/tests
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -Itests/unit $(LDFLAGS_SAN) -o $@ $< $(OUT)/librdmactl.a $(LIBS_TEST)

$(OUT)/bench/%: bench/%.c $(OUT)/librdmactl.a | $(OUT)/bench
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_SAN) -o $@ $< $(OUT)/librdmactl.a $(LIBS_CMD)

# top's refresh: the command's own printer.
$(OUT)/bench/top_refresh: bench/top_refresh.c $(OUT)/cmd/top_print.o $(OUT)/librdmactl.a | $(OUT)/bench
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -Icmd $(LDFLAGS_SAN) -o $@ $< $(OUT)/cmd/top_print.o $(OUT)/librdmactl.a $(LIBS_CMD)

# The probes' benchmark loads them itself.
$(OUT)/bench/monprobe: bench/monprobe.c $(BPFLIB_OBJ) $(OUT)/librdmactl.a | $(OUT)/bench
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_SAN) -o $@ $< $(BPFLIB_OBJ) $(OUT)/librdmactl.a $(LIBS_CMD)

# The kernel quota programs' benchmark loads them through lib/kq/kq.c, and the floors' programs (bpf/kqempty,
# bpf/kqfloor).
$(OUT)/bench/kqprobe: bench/kqprobe.c $(BPFLIB_OBJ) $(OUT)/librdmactl.a $(OUT)/kqempty.skel.h $(OUT)/kqfloor.skel.h \
		| $(OUT)/bench
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_SAN) -o $@ $< $(BPFLIB_OBJ) $(OUT)/librdmactl.a $(LIBS_CMD)

# Lab programs play the part of applications: they run under the preload, so they are built like it
# (no ASan, whose runtime must come first in a process), against the preload's copy of lib/.
$(OUT)/lab-progs/%: tests/lab/progs/%.c $(wildcard tests/lab/progs/*.h) $(OUT)/preload-obj/librdmactl-app.a | $(OUT)/lab-progs
	$(call msg,LINK,$@)
	$(Q)$(CC) $(PRELOAD_CFLAGS) $(PRELOAD_SAN) -o $@ $< $(OUT)/preload-obj/librdmactl-app.a $(LIBS_CMD) -ldl

# The SPANK plugin runs inside slurmstepd and srun: lib/ as the preload has it (hidden symbols), no ASan; it
# finds rdmactl and the interceptor where make install puts them.
$(OUT)/spank_rdmactl.so: slurm/spank_rdmactl.c $(OUT)/preload-obj/librdmactl-app.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(filter-out -fsanitize=% -fno-sanitize-recover=%,$(CFLAGS)) -DRDMACTL_BINDIR='"$(BINDIR)"' \
		-DRDMACTL_LIBDIR='"$(LIBDIR)"' -shared -o $@ $< $(OUT)/preload-obj/librdmactl-app.a -lpthread -lrt

# The hooks.d file of the OCI hook, naming the rdmactl that make install puts in BINDIR: one recipe, for the
# build's copy (the lab's podman reads it) and for make install (BINDIR may be given to it alone).
gen_oci_hooks = sed 's|@BINDIR@|$(BINDIR)|g' oci/rdmactl.json.in > $(1)
$(OUT)/oci-hooks/rdmactl.json: oci/rdmactl.json.in Makefile
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(dir $@) && $(call gen_oci_hooks,$@)

# The same verbs program linked statically with the rxe provider: no preload can see it (kernel quotas).
$(OUT)/lab-progs/kqverbs-static: tests/lab/progs/kqverbs.c | $(OUT)/lab-progs
	$(call msg,LINK,$@)
	$(Q)$(CC) $(PRELOAD_CFLAGS) -static -DRDMA_STATIC_PROVIDERS=rxe -o $@ $< \
		-libverbs -lrxe-rdmav34 -libverbs -lnl-route-3 -lnl-3 -lpthread

# A 32-bit program without libc (the compat ioctl path of kernel quotas): only gcc's -m32 code generation.
$(OUT)/lab-progs/kqcompat32: tests/lab/progs32/kqcompat32.c | $(OUT)/lab-progs
	$(call msg,LINK,$@)
	$(Q)$(CC) -m32 -O2 -Wall -Wextra -Werror -ffreestanding -fno-pic -fno-stack-protector -nostdlib -static -o $@ $<

# libFuzzer harnesses: clang, built from the sources (not the gcc archive), all of lib/ but the BPF loaders.
$(OUT)/fuzz/%: tests/fuzz/%.c $(LIB_SRC) | $(OUT)/fuzz
	$(call msg,FUZZ,$@)
	$(Q)$(CLANG) -std=gnu11 -g -O1 -D_GNU_SOURCE -Ilib -I$(OUT) -fsanitize=fuzzer,address,undefined \
		-o $@ $< $(LIB_SRC) $(LIBS_TEST)

# The accounting path of the interceptor, outside any verb: linked with the preload's objects.
$(OUT)/bench/acct: bench/acct.c $(OUT)/preload-obj/preload/acct.o $(OUT)/preload-obj/librdmactl-preload.a | $(OUT)/bench
	$(call msg,LINK,$@)
	$(Q)$(CC) $(PRELOAD_CFLAGS) -Ipreload -o $@ $< $(OUT)/preload-obj/preload/acct.o \
		$(OUT)/preload-obj/librdmactl-preload.a $(LIBS_PRELOAD)

# A stand-in libibverbs for bench/wrap (the interceptor's cost without a device).
$(OUT)/bench/stub/libibverbs.so.1: bench/stub/stubverbs.c bench/stub/stubverbs.map
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(dir $@) && $(CC) $(PRELOAD_CFLAGS) -fvisibility=default -shared -Wl,-soname,libibverbs.so.1 \
		-Wl,--version-script=bench/stub/stubverbs.map -o $@ $<

$(OUT)/bench/wrap: bench/wrap.c | $(OUT)/bench
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_SAN) -o $@ $< -ldl

bench: $(BENCH_BIN) $(OUT)/bench/stub/libibverbs.so.1 all

# --- tests ------------------------------------------------------------------------------------------
# The builds in parallel, one job per core (CHECK_JOBS). Then the lab's lanes, the last of which first runs
# the host's tests (unit, fuzz one harness at a time, bats: LAB_BESIDE of tests/lab/check-all): they use one
# core, and the lab takes the other meanwhile instead of waiting for them. Every part runs whatever failed.
CHECK_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
check: deps
	$(Q)$(MAKE) --no-print-directory -j$(CHECK_JOBS) all dra $(UNIT_BIN) $(FUZZ_BIN)
	$(Q)LAB_BESIDE="$(MAKE) --no-print-directory -k check-unit check-fuzz check-dra check-bats FUZZ_JOBS=1 \
		FUZZ_SECONDS=$(CHECK_FUZZ_SECONDS)" \
		$(MAKE) --no-print-directory check-lab

# T=SUITE[:CASE]: only tests/unit/test_SUITE.c (% is a wildcard), and in it only the RUN() tests whose name
# matches CASE (a glob; unit.h reads it from UNIT_TEST).
T_SUITE     := $(patsubst x%,%,$(word 1,$(subst :, ,x$(T))))
T_CASE      := $(word 2,$(subst :, ,x$(T)))
UNIT_SEL    := $(if $(T),$(filter $(T_SUITE:%=$(OUT)/tests/test_%),$(UNIT_BIN)),$(UNIT_BIN))

check-unit: $(UNIT_SEL)
	$(Q)$(if $(UNIT_SEL),,echo "make check-unit: T=$(T): no unit test tests/unit/test_$(T_SUITE).c" \
		"(T=SUITE[:CASE], SUITE one of: $(UNIT_BIN:$(OUT)/tests/test_%=%))" >&2; exit 2;) \
	$(if $(T_CASE),UNIT_TEST='$(T_CASE)') tests/run-unit $(UNIT_SEL)

check-fuzz: $(FUZZ_BIN)
	$(Q)tests/run-fuzz $(FUZZ_SECONDS) $(FUZZ_BIN)

# S=SUITE...: only tests/SUITE.bats (% is a wildcard); F=REGEX: only the tests whose name matches it
# (bats --filter; read from the environment, so any quoting survives).
BATS_HOST   := $(wildcard tests/*.bats)
BATS_UNKNOWN := $(strip $(foreach s,$(S),$(if $(filter tests/$(s).bats,$(BATS_HOST)),,$(s))))
BATS_SEL    := $(if $(S),$(filter $(S:%=tests/%.bats),$(BATS_HOST)),$(BATS_HOST))

check-bats: all
	$(Q)$(if $(BATS_UNKNOWN),echo "make check-bats: S=$(S): no host suite tests/$(firstword $(BATS_UNKNOWN)).bats" \
		"(S=SUITE..., one of: $(BATS_HOST:tests/%.bats=%))" >&2; exit 2;) \
	tests/run-bats host $${F:+--filter "$$F"} $(BATS_SEL)

check-host: all check-unit check-fuzz
	$(Q)$(MAKE) --no-print-directory check-bats

# Every lab suite on each kernel: Debian's stable one (6.1) and the newest of bookworm-backports (6.12).
LAB_KERNELS ?= stable backports
# On kernels after the first, only the suites where kernels differ: BPF (monitor), RDMA netlink (top) and
# the kernel's enforcement (kq, kqattack, kqdrv: BPF LSM), with the lab's own checks. The rest (preload,
# pingpong, export's engines, Slurm, podman, rdma.max, kqset: what rdmactl does with pids, namespaces, pins
# and a killed set, and kqchaos: minutes a round) run once.
LAB_SUITES_AGAIN ?= ^(00-lab|monitor|top|kq|kqattack|kqdrv)$$

# LAB_JOBS: lab runs at once (tests/lab/check-all): one guest keeps about one host core busy. With more than
# one, each kernel's suites go in one run per group of LAB_GROUPS (regexes of suite names; the suites no group
# names make one more run), and each lane takes the next run when its own ends: the longest groups first.
# kqset (its two killed counts, about 150 s) goes with kq: the run of what no group names was the last to end.
LAB_JOBS ?= 2
LAB_GROUPS ?= run|quota|oci kq|kqdrv|hw|kqset monitor|pingpong kqattack|budget

# F=REGEX: only the lab suites whose file name matches it (tests/lab/check reads it as LAB_SUITES), on
# every kernel; LAB_FILTER=REGEX: only the tests whose name matches it.
# tests/lab/nolsm/ (suite name "nolsm"): one more boot of the first kernel with an lsm= list without bpf.
LAB_NOLSM_ARGS ?= lsm=lockdown,capability,landlock,yama,apparmor,tomoyo
# LAB_K8S=1: the lab's Kubernetes too (tests/k8s: its build, once per machine, then k8s.bats; F=k8s alone;
# LAB_K8S=0 leaves it out). With it a clean clone's make check took 63 minutes on a warm 2-core machine; a
# fresh one adds the build's 32 core-minutes (tests/k8s/README.md, "In make check").
LAB_K8S ?= 1
check-lab: all dra
	$(Q)if [ -n "$${F-}" ]; then export LAB_SUITES="$$F"; fi; \
	LAB_K8S='$(LAB_K8S)' LAB_KERNELS='$(LAB_KERNELS)' LAB_SUITES_AGAIN='$(LAB_SUITES_AGAIN)' LAB_NOLSM_ARGS='$(LAB_NOLSM_ARGS)' \
	LAB_JOBS='$(LAB_JOBS)' LAB_GROUPS='$(LAB_GROUPS)' tests/lab/check-all

demo: deps all
	$(Q)tests/lab/run --timeout 600 -- tests/lab/demo

lab: all
	$(Q)tests/lab/run --shell --timeout 86400

# --- install ----------------------------------------------------------------------------------------
install: installed
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/rdmactl $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(BASH_COMPDIR)
	install -m 755 $(OUT)/rdmactl $(DESTDIR)$(BINDIR)/rdmactl
	install -m 755 $(OUT)/librdmactl-preload.so $(DESTDIR)$(LIBDIR)/rdmactl/librdmactl-preload.so
	install -m 644 $(MANPAGES) $(DESTDIR)$(MANDIR)/man8/
	install -m 644 completions/rdmactl $(DESTDIR)$(BASH_COMPDIR)/rdmactl
	install -d $(DESTDIR)$(OCI_HOOKSDIR)
	$(call gen_oci_hooks,$(DESTDIR)$(OCI_HOOKSDIR)/rdmactl.json)
	$(if $(SPANK_SO),install -d $(DESTDIR)$(SLURM_PLUGINDIR) && \
		install -m 755 $(SPANK_SO) $(DESTDIR)$(SLURM_PLUGINDIR)/spank_rdmactl.so)

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/rdmactl $(DESTDIR)$(LIBDIR)/rdmactl/librdmactl-preload.so
	-rmdir $(DESTDIR)$(LIBDIR)/rdmactl
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/man8/,$(notdir $(MANPAGES))) $(DESTDIR)$(BASH_COMPDIR)/rdmactl
	rm -f $(DESTDIR)$(OCI_HOOKSDIR)/rdmactl.json $(DESTDIR)$(SLURM_PLUGINDIR)/spank_rdmactl.so

clean:
	rm -rf $(OUT)/cmd $(OUT)/lib $(OUT)/preload-obj $(OUT)/tests $(OUT)/bench $(OUT)/fuzz $(OUT)/bpf \
		$(OUT)/lab-progs $(OUT)/*.skel.h $(OUT)/vmlinux.h $(OUT)/rdmactl $(OUT)/librdmactl* \
		$(OUT)/spank_rdmactl.so $(OUT)/oci-hooks

-include $(shell find $(OUT) -name '*.d' 2>/dev/null)

# --- the lab's Kubernetes (tests/k8s, issue 52); make check runs it too (LAB_K8S, above) ----------------
# k8s-build: kube-apiserver, -controller-manager, -scheduler, kubelet, kubectl, etcd, containerd and the lab's
# images, from the Go module proxy into RDMACTL_K8S_CACHE (default /var/cache/rdmactl-k8s), once per machine.
# check-k8s: the build, then tests/k8s/k8s.bats in a lab guest of 4 GiB: check-all's Kubernetes run, alone
# (tests/k8s/README.md).
.PHONY: k8s-build check-k8s
k8s-build:
	$(Q)tests/k8s/build >/dev/null
check-k8s: all dra
	$(Q)LAB_K8S=1 LAB_SUITES=k8s LAB_KERNELS=stable tests/lab/check-all

# --- the Kubernetes DRA driver (dra/, Go, its own module): where go is -----------------------------------
# make dra builds $(OUT)/rdmactl-dra with rdmactl's VERSION (the driver compares it with the node's rdmactl);
# make check-dra runs gofmt, go vet and go test there. Without go both say so and succeed.
GO          ?= $(or $(shell command -v go 2>/dev/null),$(wildcard /usr/local/go/bin/go))
DRA_LDFLAGS := -X github.com/rdmactl/rdmactl/dra/internal/node.DriverVersion=$(VERSION)
.PHONY: dra check-dra
dra: | $(OUT)
ifneq ($(GO),)
	$(call msg,GO,$(OUT)/rdmactl-dra)
	$(Q)cd dra && CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(DRA_LDFLAGS)' -o $(abspath $(OUT))/rdmactl-dra ./cmd/rdmactl-dra
else
	@echo "make dra: no go (GO=PATH names one): $(OUT)/rdmactl-dra not built" >&2
endif

check-dra:
ifneq ($(GO),)
	$(Q)cd dra && out=$$($(dir $(GO))gofmt -l .) && { [ -z "$$out" ] || { echo "gofmt: $$out" >&2; exit 1; }; }
	$(Q)cd dra && $(GO) vet ./... && $(GO) test ./...
else
	@echo "make check-dra: no go (GO=PATH names one): the driver's tests not run" >&2
endif
