#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The documentation's examples paste and parse: every example of README.md, of the man pages' EXAMPLES and of
# each command's --help, as a user pastes it; each man page's SYNOPSIS names the options its command takes.

load helper

# Every command of rdmactl --help's list.
commands() {
	"$RDMACTL" --help | sed -n '/^Commands:/,/^$/s/^  \([a-z-]\+\) .*/\1/p'
}

# The lines of SECTION of a man page as man(1) shows them, but with '-' drawn as roff's hyphen (U+2010), as
# groff draws it where the man macros do not map it back to '-' (groff 1.22's do for a UTF-8 terminal; Debian's
# man.local has this very line, commented out, to check pages): an unescaped '-' in a command then shows,
# and pastes, as a character that neither a shell nor rdmactl takes for '-'.
man_section() {
	local page=$1 section=$2
	awk '{ print } /^\.TH / && !done { print ".char - \\[hy]"; done = 1 }' "$page" |
		GROFF_NO_SGR=1 groff -man -Tutf8 -P-c -P-b -P-u 2>/dev/null |
		awk -v s="$section" '/^[A-Z]/ { on = ($0 == s); next } on { sub(/^       /, ""); print }'
}

# The examples of a --help: the lines after "Examples:".
help_examples() {
	"$RDMACTL" "$@" --help | sed -n '/^Examples:$/,$p' | tail -n +2
}

# The lines of README.md's sh blocks, a line "### BLOCK" before each block.
readme_examples() {
	awk '/^```sh$/ { on = 1; print "### BLOCK"; next } /^```/ { on = 0 } on' "$TOP/README.md"
}

# The rdmactl commands of example lines on stdin, as bash would split them: one command a line, its words
# separated by \x1f, led by @sudo and @env=NAME=VALUE words. A line ending in '\' goes on in the next; a
# prompt ('$ ', '# ') is dropped; '# ...' is a comment; the variable of a 'for VAR in WORD ...' loop is its
# first WORD. "### BLOCK" starts a new example (forgets the loop variables).
example_commands() {
	local line text c q word i n cmd=() words=()
	declare -A vars=()
	while IFS= read -r line; do
		[ "$line" = "### BLOCK" ] && { vars=(); continue; }
		text=$line
		while [[ $text == *\\ ]] && IFS= read -r line; do
			text=${text%\\}$line
		done
		text=${text#\$ }
		[[ $text == "# rdmactl"* ]] && text=${text#\# }
		# split into words and operators
		words=() q='' word='' n=${#text} i=0
		local have=0
		while [ $i -lt $n ]; do
			c=${text:i:1}
			if [ -n "$q" ]; then
				if [ "$c" = "$q" ]; then q=''
				elif [ "$q" = '"' ] && [ "$c" = '$' ] && [[ ${text:i+1} =~ ^([A-Za-z_][A-Za-z0-9_]*) ]] &&
					[ -n "${vars[${BASH_REMATCH[1]}]+x}" ]; then
					word+=${vars[${BASH_REMATCH[1]}]}; i=$((i + ${#BASH_REMATCH[1]}))
				else word+=$c; fi
			elif [ "$c" = "'" ] || [ "$c" = '"' ]; then q=$c have=1
			elif [ "$c" = '\' ]; then word+=${text:i+1:1}; i=$((i + 1)); have=1
			elif [ "$c" = '$' ] && [[ ${text:i+1} =~ ^([A-Za-z_][A-Za-z0-9_]*) ]] &&
				[ -n "${vars[${BASH_REMATCH[1]}]+x}" ]; then
				word+=${vars[${BASH_REMATCH[1]}]}; i=$((i + ${#BASH_REMATCH[1]})); have=1
			elif [[ $c == [[:space:]] ]]; then
				[ $have = 1 ] && words+=("$word"); word='' have=0
			elif [ "$c" = '#' ] && [ $have = 0 ]; then
				break
			elif [[ $c == [\;\&\|\<\>] ]]; then
				[ $have = 1 ] && words+=("$word"); word='' have=0
				local op=$c
				while [[ ${text:i+1:1} == [\&\|\>] ]]; do op+=${text:i+1:1}; i=$((i + 1)); done
				words+=($'\x1e'"$op")
			else word+=$c; have=1; fi
			i=$((i + 1))
		done
		[ $have = 1 ] && words+=("$word")
		words+=($'\x1e;')
		# group into commands; keep those that run rdmactl
		cmd=()
		local redirect=0 w
		for w in "${words[@]}"; do
			if [[ $w == $'\x1e'* ]]; then
				case ${w#$'\x1e'} in
				'>' | '>>' | '<' | '&>' | '2>') redirect=1; continue ;;
				esac
				if [ ${#cmd[@]} -gt 0 ]; then
					local j=0 pre=()
					while [ $j -lt ${#cmd[@]} ]; do
						if [ "${cmd[j]}" = sudo ]; then pre+=(@sudo)
						elif [[ ${cmd[j]} =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; then pre+=("@env=${cmd[j]}")
						else break; fi
						j=$((j + 1))
					done
					if [ "${cmd[j]:-}" = rdmactl ]; then
						local IFS=$'\x1f'
						printf '%s\n' "${pre[*]}${pre[*]:+$'\x1f'}${cmd[*]:j}"
						unset IFS
					elif [ "${cmd[0]}" = for ] && [ "${cmd[2]:-}" = in ] && [ -n "${cmd[3]:-}" ]; then
						vars[${cmd[1]}]=${cmd[3]}
					fi
				fi
				cmd=()
				continue
			fi
			[ $redirect = 1 ] && { redirect=0; continue; }
			[ "$w" = do ] && [ ${#cmd[@]} -eq 0 ] && continue
			cmd+=("$w")
		done
	done
}

# Every example as "SOURCE<TAB>COMMAND" (COMMAND as example_commands prints it).
all_examples() {
	local c p
	readme_examples | example_commands | sed 's/^/README.md\t/'
	for p in "$TOP"/man/*.8; do
		man_section "$p" EXAMPLES | example_commands | sed "s|^|man/${p##*/}\t|"
	done
	for c in "" $(commands); do
		help_examples $c | example_commands | sed "s|^|rdmactl${c:+ $c} --help\t|"
	done
}

# The options a --help lists, one a line: SHORT LONG ARG, each '-' when there is none; ARG is 'required',
# 'optional' or 'none'. An option line starts at column 2 (-x) or 6 (--long), its description after two
# spaces or more (or on the next line, at column 29).
help_options() {
	"$RDMACTL" "$@" --help | awk '
		/^Examples:$/ { exit }
		/^  -[^-]/ || /^      --[a-z]/ {
			spec = substr($0, 3)
			gsub(/^ +/, "", spec)
			sub(/  .*/, "", spec)
			s = "-"; l = "-"; a = "none"
			n = split(spec, part, ", ")
			for (i = 1; i <= n; i++) {
				p = part[i]
				if (p ~ /^--/) {
					name = p; sub(/[[=].*/, "", name); l = name
					if (p ~ /\[=/) a = "optional"; else if (p ~ /=/) a = "required"
				} else {
					s = substr(p, 1, 2)
					if (p ~ /^-. /) a = "required"
				}
			}
			print s, l, a
		}'
}

# help_options and commands, once a test (check_words asks them for every example).
cached() {
	local f=$BATS_TEST_TMPDIR/cache.${*// /_}
	[ -f "$f" ] || "$@" >"$f"
	cat "$f"
}

# Check the words of one rdmactl command (as example_commands prints it) against the options of --help: the
# global options before the command, then the command's own; an option's argument is the next word unless
# it is given with '='; words after '--' are CMD's. Prints one line per problem.
check_words() {
	local line=$1 words w sub='' i=1 n opt arg mode
	IFS=$'\x1f' read -ra words <<<"$line"
	while [ "${words[0]}" != rdmactl ]; do words=("${words[@]:1}"); done
	declare -A mode_of=()
	while read -r s l a; do
		[ "$s" != - ] && mode_of[$s]=$a
		[ "$l" != - ] && mode_of[$l]=$a
	done < <(cached help_options)
	n=${#words[@]}
	while [ $i -lt $n ]; do
		w=${words[i]}
		if [[ $w == *[‐–—−]* ]]; then
			echo "'$w': not an ASCII '-' (a hyphen or dash pastes as a word no shell or rdmactl takes)"
		elif [ "$w" = -- ]; then
			break
		elif [[ $w == --* ]]; then
			opt=${w%%=*}
			mode=${mode_of[$opt]:-}
			if [ -z "$mode" ]; then
				echo "$opt: not an option of 'rdmactl${sub:+ $sub} --help'"
			elif [[ $w == *=* ]] && [ "$mode" = none ]; then
				echo "$w: $opt takes no argument"
			elif [[ $w != *=* ]] && [ "$mode" = required ]; then
				i=$((i + 1))
				[ $i -lt $n ] || echo "$opt: its argument is missing"
			fi
		elif [[ $w == -?* ]]; then
			local k=1
			while [ $k -lt ${#w} ]; do
				opt=-${w:k:1}
				mode=${mode_of[$opt]:-}
				if [ -z "$mode" ]; then
					echo "$opt (in $w): not an option of 'rdmactl${sub:+ $sub} --help'"
					break
				elif [ "$mode" != none ]; then
					# the rest of the word is the argument, else the next word (optional: only attached)
					[ $((k + 1)) -lt ${#w} ] || [ "$mode" = optional ] || i=$((i + 1))
					break
				fi
				k=$((k + 1))
			done
		elif [ -z "$sub" ]; then
			if ! cached commands | grep -qx -- "$w"; then
				echo "'$w': not a command of 'rdmactl --help'"
				return
			fi
			sub=$w
			mode_of=()
			while read -r s l a; do
				[ "$s" != - ] && mode_of[$s]=$a
				[ "$l" != - ] && mode_of[$l]=$a
			done < <(cached help_options "$sub")
		fi
		i=$((i + 1))
	done
}

# Run one rdmactl command (as example_commands prints it) as a user pastes it, but as nobody, in a mount
# and network namespace of its own: /tmp and /dev/shm private and empty (the ledger is a new one),
# stdin empty, for at most 3 s (124: still running, as a server or a stream is). Prints its exit status,
# then its stderr.
sandbox_run() {
	local words w env=() args=()
	IFS=$'\x1f' read -ra words <<<"$1"
	for w in "${words[@]}"; do
		case $w in
		@sudo) ;;
		@env=*) env+=("${w#@env=}") ;;
		*) args+=("$w") ;;
		esac
	done
	local rc=0
	# /mnt/build: the build directory, still there once /tmp is a new one (BATS_TMPDIR may be under it)
	unshare --mount --net --fork -- sh -c '
		set -e
		mount --make-rprivate /
		mount -t tmpfs -o mode=755 tmpfs /mnt
		mkdir /mnt/build
		mount --bind "$BUILD" /mnt/build
		mount -t tmpfs -o mode=1777 tmpfs /tmp
		mount -t tmpfs -o mode=1777 tmpfs /dev/shm
		ip link set lo up
		cd /tmp
		exec setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all -- \
			env "$@"' sh "${env[@]}" timeout -k 1 3 /mnt/build/rdmactl "${args[@]:1}" \
		</dev/null >/dev/null 2>"$BATS_TEST_TMPDIR/stderr" || rc=$?
	echo "$rc"
	cat "$BATS_TEST_TMPDIR/stderr"
}

@test "--help prints its examples as written, one command a line, at any width (issue 51 item 9)" {
	local c ex fmt
	for c in "" $(commands); do
		ex=$(help_examples $c)
		[ -n "$ex" ] || fail "rdmactl $c --help: no Examples:"
		# argp fills text from column 0: a line not indented by two is a piece of a command that was cut
		if grep -qv '^  ' <<<"$ex"; then
			fail "rdmactl $c --help: an example cut by the width:"$'\n'"$ex"
		fi
		for fmt in COLUMNS=60 ARGP_HELP_FMT=rmargin=60 ARGP_HELP_FMT=rmargin=40; do
			assert_equal "$(env $fmt "$RDMACTL" $c --help | sed -n '/^Examples:$/,$p' | tail -n +2)" "$ex"
		done
	done
}

@test "cdi --help: its commands and its devices are a list of two columns (issue 51 item 9)" {
	local fmt
	for fmt in ARGP_HELP_FMT=rmargin=79 ARGP_HELP_FMT=rmargin=60; do
		run -0 env $fmt "$RDMACTL" cdi --help
		assert_line --regexp '^  generate {2,}[a-z]'
		assert_line --regexp '^  list {2,}[a-z]'
		assert_line --regexp '^  rdmactl\.io/hca=IBDEV {2,}[a-z]'
		assert_line --regexp '^  rdmactl\.io/budget=NAME {2,}[a-z]'
		# every other line of the lists is a description's, in the second column
		run bash -c "sed -n '/^ Commands:/,/^ Options:/p' <<<\"\$1\" | grep -Ev '^( [A-Z][a-z ]+:|  [a-z][^ ]* {2,}[^ ].*| {29}[^ ].*|)$'" _ "$output"
		assert_output ''
	done
}

@test "the examples of README.md, the man pages and every --help use only options their command lists in --help (issue 51 item 9)" {
	local src cmd problems all=''
	local n=0
	while IFS=$'\t' read -r src cmd; do
		n=$((n + 1))
		problems=$(check_words "$cmd")
		[ -z "$problems" ] || all+="$src: ${cmd//$'\x1f'/ }"$'\n'"$(sed 's/^/  /' <<<"$problems")"$'\n'
	done < <(all_examples)
	[ $n -gt 50 ] || fail "only $n examples found"
	[ -z "$all" ] || fail "$all"
}

# Whether a usage error says that a thing the example names is not on this host (pid 1234, a cgroup
# tenant-a, a user alice): the example is right, the host is not the one it was written for.
absent_here() {
	local err=$1 cmd=$2 w
	w=$(sed -nE "s/^rdmactl [a-z-]+: (no process with pid ([0-9]+)|cgroup '([^']+)': No such file or directory|unknown user '([^']+)')$/\2\3\4/p" <<<"$err")
	[ -n "$w" ] && [[ $'\x1f'$cmd$'\x1f' == *$'\x1f'"$w"$'\x1f'* ]]
}

@test "the examples of README.md, the man pages and every --help run without a usage error, as nobody without an RDMA device (issue 51 item 9)" {
	[ "$(id -u)" = 0 ] || skip "needs root for its sandbox (a mount namespace and the user nobody)"
	local src cmd out rc err all='' ok=0 why
	while IFS=$'\t' read -r src cmd; do
		out=$(sandbox_run "$cmd")
		rc=${out%%$'\n'*}
		err=${out#"$rc"}
		err=${err#$'\n'}
		why=''
		if grep -qE '^(unshare|sh|setpriv|env|timeout):' <<<"$err"; then
			why="the sandbox could not run it"
		elif grep -E '^rdmactl' <<<"$err" | grep -qE "unrecognized option|invalid option|unexpected argument|requires an argument|allow an argument|ambiguous|unknown command"; then
			why="a usage error"
		elif [ "$rc" = 2 ] && ! absent_here "$err" "$cmd"; then
			why="a usage error"
		elif [ "$rc" != 0 ] && [ "$rc" != 1 ] && [ "$rc" != 124 ] && [ "$rc" != 2 ] &&
			[[ $cmd != *$'\x1f'run$'\x1f'* ]]; then
			why="exit $rc is not rdmactl's (0, 1, 2)"
		fi
		[ "$rc" = 0 ] && ok=$((ok + 1))
		[ -z "$why" ] || all+="$src: ${cmd//$'\x1f'/ }: exit $rc, $why"$'\n'"$(sed 's/^/  /' <<<"$err")"$'\n'
	done < <(all_examples)
	# the sandbox runs rdmactl: what needs neither root nor a device works
	[ $ok -ge 10 ] || fail "only $ok examples exited 0"$'\n'"$all"
	[ -z "$all" ] || fail "$all"
}

# The options a man page's SYNOPSIS names, as man(1) shows it: -x and --long words. An upper-case part of a
# long one is a placeholder (--max-KIND): printed as an extended regular expression.
synopsis_options() {
	man_section "$1" SYNOPSIS | grep -oE '(^|[][ |(])--?[A-Za-z?][A-Za-z0-9_-]*' | sed -E 's/^[][ |(]//' |
		sed -E ':a; s/^(--[a-z0-9-]*)[A-Z]+/\1[a-z0-9_-]+/; ta' | sort -u
}

@test "each man page's SYNOPSIS names the options its command's --help lists, and no other (issue 51 item 9)" {
	local c page s l a o found all=''
	for c in "" $(commands); do
		page=$TOP/man/rdmactl${c:+-$c}.8
		[ -f "$page" ] || { all+="rdmactl $c: no man page ${page#"$TOP"/}"$'\n'; continue; }
		local syn
		syn=$(synopsis_options "$page")
		# every option of --help, but the global ones (rdmactl(8) describes those), is in the SYNOPSIS
		while read -r s l a; do
			case $l in --help | --json | --pretty | --usage | --verbose | --version) continue ;; esac
			found=''
			for o in $syn; do
				if [[ $o == *'[a-z'* ]]; then
					[[ $l =~ ^$o$ ]] && found=1
				elif [ "$o" = "$s" ] || [ "$o" = "$l" ]; then
					found=1
				fi
			done
			if [ -z "$found" ]; then
				[ "$s" = - ] || l="$s, $l"
				all+="${page#"$TOP"/}: SYNOPSIS lacks $l of 'rdmactl $c --help'"$'\n'
			fi
		done < <(help_options $c)
		# every option of the SYNOPSIS is one of --help
		for o in $syn; do
			if ! help_options $c | awk '{ print $1; print $2 }' | grep -qxE -- "$o"; then
				all+="${page#"$TOP"/}: SYNOPSIS names $o, not an option of 'rdmactl $c --help'"$'\n'
			fi
		done
	done
	[ -z "$all" ] || fail "$all"
}

@test "rdmactl(8) names every command and its page (issue 51 item 9)" {
	local c re text
	text=$(man_section "$TOP/man/rdmactl.8" DESCRIPTION; man_section "$TOP/man/rdmactl.8" "SEE ALSO")
	for c in $(commands); do
		# in a page's name a hyphen is a hyphen
		re=${c//-/[-‐]}
		# the list of commands (its tags, one a line) or its text
		grep -qE "^$re( |$)|rdmactl $re([^a-z-]|$)" <<<"$text" || fail "rdmactl(8) never names the command $c"
		grep -qE "rdmactl[-‐]$re\(8\)" <<<"$text" || fail "rdmactl(8) never names rdmactl-$c(8)"
	done
}
