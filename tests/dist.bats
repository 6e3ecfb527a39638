#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# What operators get besides the binary (dist/): systemd units, Prometheus alerting rules, Grafana dashboard.
# The Debian package that ships them all: tests/deb.bats.

load helper

# Every metric family rdmactl export can write: the family names in its renderer.
families() {
	grep -o '"rdmactl_[a-z_]*"' "$TOP/cmd/export_render.c" | tr -d '"' | sort -u
}

# The installed tree, with real paths (the units name the rdmactl they run).
install_real() {
	D=$BATS_TEST_TMPDIR/inst
	run make -C "$TOP" --no-print-directory OUT="$BUILD" install PREFIX="$D" OCI_HOOKSDIR="$D/oci" \
		SLURM_PLUGINDIR="$D/slurm"
	assert_success
}

# The command line of a unit's ExecStart=, with its ${VAR} and $VAR words given as in the environment.
exec_start() {
	sed -n 's/^ExecStart=//p' "$1"
}

@test "families: the renderer's names are the ones a scrape shows" {
	run -0 families
	local fams=$output
	[ "${#lines[@]}" -ge 20 ]
	RDMACTL_LEDGER=$BATS_TEST_TMPDIR/ledger run -0 "$RDMACTL" quota init
	RDMACTL_LEDGER=$BATS_TEST_TMPDIR/ledger run -0 "$RDMACTL" quota set qp 4 --global
	RDMACTL_LEDGER=$BATS_TEST_TMPDIR/ledger run -0 --separate-stderr "$RDMACTL" export --once
	local t n=0
	for t in $(awk '$1 == "#" && $2 == "TYPE" { print $3 }' <<<"$output"); do
		grep -qx "$t" <<<"$fams" || { echo "$t is written but not found in cmd/export_render.c"; return 1; }
		n=$((n + 1))
	done
	# info, sources, collection time, quota limit/usage/processes, refusals at least
	[ "$n" -ge 7 ]
}

@test "make help names deb and the operators' files" {
	run -0 make -C "$TOP" --no-print-directory help
	assert_line --regexp '^  deb  '
	assert_output --partial SYSTEMDUNITDIR
}

@test "units: make install puts them in SYSTEMDUNITDIR naming BINDIR's rdmactl; uninstall removes them" {
	local d=$BATS_TEST_TMPDIR/root
	run -0 make -C "$TOP" --no-print-directory OUT="$BUILD" install DESTDIR="$d" PREFIX=/usr/local \
		SYSTEMDUNITDIR=/etc/systemd/system
	for u in rdmactl-export.service rdmactl-ledger.service; do
		[ -f "$d/etc/systemd/system/$u" ]
		run -0 grep -c '^ExecStart=/usr/local/bin/rdmactl ' "$d/etc/systemd/system/$u"
		refute_output --partial '@'
	done
	[ -f "$d/usr/local/share/rdmactl/prometheus/rdmactl.rules.yml" ]
	[ -f "$d/usr/local/share/rdmactl/grafana/rdmactl.json" ]
	run -0 make -C "$TOP" --no-print-directory OUT="$BUILD" uninstall DESTDIR="$d" PREFIX=/usr/local \
		SYSTEMDUNITDIR=/etc/systemd/system
	[ ! -e "$d/etc/systemd/system/rdmactl-export.service" ]
	[ ! -e "$d/usr/local/share/rdmactl" ]
}

@test "units: systemd-analyze verify finds nothing to say about them" {
	install_real
	[ -f "$D/lib/systemd/system/rdmactl-export.service" ]
	# unknown keys and bad values are only warnings for verify: any output fails
	MANPATH=$D/share/man run systemd-analyze verify "$D"/lib/systemd/system/rdmactl-export.service \
		"$D"/lib/systemd/system/rdmactl-ledger.service
	assert_success
	assert_output ""
}

@test "units: hardened (systemd-analyze security: export 2.5 at most, ledger 2.0), as nobody's user, bounded capabilities" {
	install_real
	run systemd-analyze security --offline=yes --threshold=25 "$D/lib/systemd/system/rdmactl-export.service"
	assert_success
	run systemd-analyze security --offline=yes --threshold=20 "$D/lib/systemd/system/rdmactl-ledger.service"
	assert_success
	local u=$D/lib/systemd/system/rdmactl-export.service
	run -0 grep -x 'DynamicUser=yes' "$u"
	run -0 grep -x 'CapabilityBoundingSet=CAP_BPF CAP_DAC_READ_SEARCH' "$u"
	run -0 grep -x 'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX AF_NETLINK' "$u"
	run -0 grep -x 'ProtectSystem=strict' "$u"
	run -0 grep -x 'NoNewPrivileges=yes' "$u"
	# tenants' processes must stay visible in /proc
	run -1 grep -E '^ProtectProc=(invisible|noaccess)' "$u"
	run -0 grep -x 'CapabilityBoundingSet=' "$D/lib/systemd/system/rdmactl-ledger.service"
}

# The [Service] overrides rdmactl-export(8) gives (FILES), one a line: "N<TAB>line", N the override's number.
man_overrides() {
	awk '/^\.nf$/ { n++; nf = 1; next } /^\.fi$/ { nf = 0 } nf && /^\[Service\]$/ { o[n] = 1 } nf && o[n] { gsub(/\\-/, "-"); print n "\t" $0 }' \
		"$TOP/man/rdmactl-export.8"
}

@test "units: rdmactl-export(8)'s overrides (one address; --textfile with ReadWritePaths=DIR) verify, and the unit names them (issue 51)" {
	install_real
	local u=$D/lib/systemd/system/rdmactl-export.service n dir
	run -0 man_overrides
	local all=$output
	[ "$(cut -f1 <<<"$all" | sort -u | wc -l)" = 2 ]
	for n in $(cut -f1 <<<"$all" | sort -u); do
		mkdir -p "$BATS_TEST_TMPDIR/o$n"
		{ cat "$u"; grep "^$n"$'\t' <<<"$all" | cut -f2-; } >"$BATS_TEST_TMPDIR/o$n/rdmactl-export.service"
		MANPATH=$D/share/man run systemd-analyze verify "$BATS_TEST_TMPDIR/o$n/rdmactl-export.service"
		assert_success
		assert_output ""
		# each line of it is in the unit's comment too
		while IFS= read -r line; do
			[ "$line" = "[Service]" ] && continue
			grep -qxF "#   $line" "$u" || { echo "not in the unit's comment: $line" >&2; return 1; }
		done < <(grep "^$n"$'\t' <<<"$all" | cut -f2-)
	done
	# one binds an address; the other writes a textfile in the directory it opens
	grep -q $'\tEnvironment=EXPORT_OPTS="--listen [0-9.]*:9476"$' <<<"$all"
	n=$(sed -n 's/\tEnvironment=EXPORT_OPTS="--textfile [^" ]*"$//p' <<<"$all")
	dir=$(sed -n 's/.*\tEnvironment=EXPORT_OPTS="--textfile \([^" ]*\)"$/\1/p' <<<"$all")
	[ -n "$dir" ]
	grep -qxF "$n"$'\tReadWritePaths='"$dir" <<<"$all"
	run -0 grep -c 'The Debian package enables and starts it' "$u"
}

@test "units: the ledger unit's command creates a root-owned policy, only where there is no ledger" {
	install_real
	local u=$D/lib/systemd/system/rdmactl-ledger.service
	run -0 exec_start "$u"
	local cmd=$output path
	path=$(sed -n 's/^ConditionPathExists=!//p' "$u")
	[ -n "$path" ]
	# the condition names the ledger the command creates
	[[ $cmd == *" --ledger $path" ]]
	local mine=$BATS_TEST_TMPDIR/shm/rdmactl.ledger
	mkdir -p "${mine%/*}"
	run -0 ${cmd//$path/$mine}
	assert_output "created an empty ledger at $mine for 16384 processes"
	run -0 stat -c '%U %a' "$mine"
	assert_output "$(id -un) 644"
	run -0 "$RDMACTL" quota show --ledger "$mine" -j
}

@test "units: the export unit's command runs (EXPORT_OPTS=--once prints the metrics)" {
	install_real
	local u=$D/lib/systemd/system/rdmactl-export.service
	run -0 exec_start "$u"
	local cmd=$output
	[[ $cmd == *'$EXPORT_OPTS' ]]
	EXPORT_OPTS=--once
	RDMACTL_LEDGER=$BATS_TEST_TMPDIR/none run -0 --separate-stderr ${cmd//'$EXPORT_OPTS'/$EXPORT_OPTS}
	assert_line 'rdmactl_source_up{source="ledger"} 0'
	assert_line --regexp '^rdmactl_build_info\{version="[^"]+"\} 1$'
}

@test "rules: promtool check rules and promtool test rules (each alert fires on its input series)" {
	cd "$TOP/dist/prometheus"
	run -0 promtool check rules rdmactl.rules.yml
	assert_output --partial "SUCCESS: 9 rules found"
	run -0 promtool test rules rdmactl.rules.test.yml
	assert_output --partial SUCCESS
	# every alert of the rules has a test
	local a
	for a in $(sed -n 's/^ *- alert: //p' rdmactl.rules.yml); do
		grep -q "alertname: $a\$" rdmactl.rules.test.yml || { echo "no test of $a"; return 1; }
	done
}

# The series the expression of the shipped alert $2 selects after 11 minutes of the exposition in file $1
# (its every series constant): promtool test rules checks them against $3, exp_samples in YAML.
alert_selects() {
	local t=$BATS_TEST_TMPDIR/sel.test.yml expr
	expr=$(awk -v a="$2" '$0 ~ "- alert: " a "$" { f = 1; next } f && /^ *expr: / { sub(/^ *expr: /, ""); print; exit }' \
		"$TOP/dist/prometheus/rdmactl.rules.yml")
	[ -n "$expr" ]
	{
		echo 'rule_files: []'
		echo 'evaluation_interval: 1m'
		echo 'tests:'
		echo '  - interval: 1m'
		echo '    input_series:'
		grep -v '^#' "$1" | while read -r series value; do
			printf "      - series: '%s'\n        values: '%sx15'\n" "${series//\'/\'\'}" "$value"
		done
		echo '    promql_expr_test:'
		echo "      - expr: '${expr//\'/\'\'}'"
		echo '        eval_time: 11m'
		echo "        exp_samples: $3"
	} >"$t"
	promtool test rules "$t"
}

@test "rules: RdmactlSourceDown on the exporter's own output: no ledger is absent, no alert; a ledger it cannot read fires it (issue 51)" {
	# a node where no limit was ever set: no ledger file
	run -0 --separate-stderr "$RDMACTL" export --once --ledger "$BATS_TEST_TMPDIR/none"
	echo "$output" >"$BATS_TEST_TMPDIR/absent.prom"
	assert_line 'rdmactl_source_state{source="ledger",state="absent"} 1'
	assert_line 'rdmactl_source_state{source="ledger",state="down"} 0'
	run -0 alert_selects "$BATS_TEST_TMPDIR/absent.prom" RdmactlSourceDown '[]'
	# a ledger that is there and cannot be read
	echo 'not a ledger' >"$BATS_TEST_TMPDIR/bad"
	run -0 --separate-stderr "$RDMACTL" export --once --ledger "$BATS_TEST_TMPDIR/bad"
	echo "$output" >"$BATS_TEST_TMPDIR/down.prom"
	assert_line 'rdmactl_source_state{source="ledger",state="down"} 1'
	run -0 alert_selects "$BATS_TEST_TMPDIR/down.prom" RdmactlSourceDown \
		"[{labels: 'rdmactl_source_state{source=\"ledger\",state=\"down\"}', value: 1}]"
	# and nothing else: the same expectation without it fails
	run -1 alert_selects "$BATS_TEST_TMPDIR/down.prom" RdmactlSourceDown '[]'
}

@test "rules: a rule that no longer matches its test fails promtool test rules" {
	cp "$TOP"/dist/prometheus/rdmactl.rules*.yml "$BATS_TEST_TMPDIR/"
	cd "$BATS_TEST_TMPDIR"
	sed -i 's/ > 0.9$/ > 0.95/' rdmactl.rules.yml
	run -1 promtool test rules rdmactl.rules.test.yml
	assert_output --partial "alertname: RdmactlQuotaNearLimit"
}

@test "rules: they read only families rdmactl export writes (and node_exporter's textfile mtime)" {
	run -0 families
	local fams=$output e n
	while IFS= read -r e; do
		for n in $("$TOP/tests/dist/promql_names.py" "$e"); do
			[ "$n" = node_textfile_mtime_seconds ] && continue
			grep -qx "$n" <<<"$fams" || { echo "rule reads $n, which rdmactl export does not write: $e"; return 1; }
		done
	done < <(sed -n 's/^ *expr: //p' "$TOP/dist/prometheus/rdmactl.rules.yml")
	# and the test series are of the same families
	for n in $(sed -n "s/^ *- series: '\([a-z_]*\){.*/\1/p" "$TOP/dist/prometheus/rdmactl.rules.test.yml"); do
		[ "$n" = node_textfile_mtime_seconds ] || grep -qx "$n" <<<"$fams" || { echo "test series $n"; return 1; }
	done
}

@test "dashboard: valid JSON whose every query reads families rdmactl export writes" {
	local j=$TOP/dist/grafana/rdmactl.json
	run -0 jq -e '.uid and .title and (.panels | length > 5)' "$j"
	run -0 families
	local fams=$output e n count=0 names
	while IFS= read -r e; do
		names=$("$TOP/tests/dist/promql_names.py" "$e")
		[ -n "$names" ] || { echo "no metric in: $e"; return 1; }
		for n in $names; do
			grep -qx "$n" <<<"$fams" || { echo "dashboard reads $n, which rdmactl export does not write: $e"; return 1; }
		done
		count=$((count + 1))
	done < <(jq -r '(.panels[] | .targets[]? | .expr), (.templating.list[] | select(.type == "query") | .definition)' "$j")
	[ "$count" -ge 15 ]
	# usage against limit, refusals and create rates are there
	run -0 jq -r '.panels[] | .targets[]? | .expr' "$j"
	assert_output --regexp 'rdmactl_quota_usage.* / .*rdmactl_quota_limit'
	assert_output --partial 'rate(rdmactl_refusals_total'
	assert_output --partial 'rate(rdmactl_creates_total'
}

@test "dashboard: promtool parses every query (as recording rules, Grafana's variables given values)" {
	local j=$TOP/dist/grafana/rdmactl.json f=$BATS_TEST_TMPDIR/dash.rules.yml e i=0
	printf 'groups:\n  - name: dashboard\n    rules:\n' > "$f"
	while IFS= read -r e; do
		e=$("$TOP/tests/dist/promql_names.py" --promql "$e")
		e=${e//'$__rate_interval'/5m}
		e=$(sed -E 's/\$\{?[a-z_]+\}?/.*/g' <<<"$e")
		printf '      - record: dashboard:q%d\n        expr: %s\n' $i "$(jq -Rn --arg e "$e" '$e')" >> "$f"
		i=$((i + 1))
	done < <(jq -r '(.panels[] | .targets[]? | .expr), (.templating.list[] | select(.type == "query") | .definition)' "$j")
	run promtool check rules "$f"
	assert_success
	assert_output --partial "SUCCESS: $i rules found"
	# and a query that is not PromQL fails there
	printf '      - record: dashboard:bad\n        expr: "sum by (cgroup (rdmactl_objects)"\n' >> "$f"
	run -1 promtool check rules "$f"
}
