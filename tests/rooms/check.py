#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The include rule of lib/'s rooms (doc/design.md, "The rooms of lib/"): every quoted #include of lib/,
preload/, slurm/, bpf/ and cmd/ against the table there; also rooms missing from the table and circles of
files. Usage: check.py [TREE] (default: the checkout this file is in). Exit 0 clean, 1 with a line per break."""
import os
import re
import sys

tree = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', '..'))
errors = []

# the table: | `room` or `dir/` | what | may include |
rule = {}
text = open(os.path.join(tree, 'doc/design.md'), encoding='utf-8').read()
marker = text.find('<!-- rooms:')
if marker < 0:
    sys.exit('check.py: doc/design.md has no rooms table (<!-- rooms: ... -->)')
for line in text[marker:].splitlines()[1:]:
    if not line.startswith('|'):
        if rule:
            break
        continue
    cells = [c.strip() for c in line.strip().strip('|').split('|')]
    m = re.fullmatch(r'`([a-z]+)/?`', cells[0])
    if not m:
        continue
    rule[m.group(1)] = set(cells[2].split()) if len(cells) > 2 else set()

def room_of(path):
    """The room of a file of the tree (relative path), or None when the rule says nothing of it."""
    parts = path.split('/')
    if parts[0] == 'lib':
        return parts[1] if len(parts) > 2 else 'lib'
    return parts[0] if parts[0] in ('preload', 'slurm', 'bpf', 'cmd') else None

files = []
for top in ('lib', 'preload', 'slurm', 'bpf', 'cmd'):
    for d, _, names in os.walk(os.path.join(tree, top)):
        for n in sorted(names):
            if n.endswith(('.c', '.h')):
                files.append(os.path.relpath(os.path.join(d, n), tree))
for d in sorted(os.listdir(os.path.join(tree, 'lib'))):
    full = os.path.join(tree, 'lib', d)
    if os.path.isdir(full) and d not in rule:
        errors.append(f'lib/{d}/: a room the table of doc/design.md does not name')
    elif os.path.isfile(full):
        errors.append(f'lib/{d}: a file outside every room')

inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
graph = {}
for f in files:
    room = room_of(f)
    graph[f] = []
    src = open(os.path.join(tree, f), encoding='utf-8', errors='replace').read()
    for lineno, name in ((src.count('\n', 0, m.start()) + 1, m.group(1)) for m in inc.finditer(src)):
        here = os.path.normpath(os.path.join(os.path.dirname(f), name))
        if os.path.exists(os.path.join(tree, here)) and not f.startswith('lib/'):
            target = here          # a folder's own file (quoted includes look there first)
        elif os.path.exists(os.path.join(tree, 'lib', name)):
            target = 'lib/' + name  # -Ilib: by room
        elif f.startswith('lib/') and os.path.exists(os.path.join(tree, here)):
            target = here          # lib's own relative reach (../../bpf/kq.h)
        elif name.endswith('.skel.h') or name == 'vmlinux.h':
            continue               # generated into the build directory
        else:
            errors.append(f'{f}:{lineno}: #include "{name}" is no file of the tree')
            continue
        graph[f].append(target)
        troom = room_of(target)
        if f.startswith('lib/') and '/' not in name and target.startswith('lib/'):
            errors.append(f'{f}:{lineno}: #include "{name}": include by room ("{target[4:]}")')
        if troom == room or troom is None:
            continue
        if troom not in rule.get(room, set()):
            errors.append(f'{f}:{lineno}: {room} includes {troom} ("{name}"), which doc/design.md does not allow')

# circles of files: a header and its inline twin (two files that include each other) are allowed
state = {}
def visit(f, stack):
    state[f] = 1
    stack.append(f)
    for t in graph.get(f, []):
        if state.get(t) == 1:
            cyc = stack[stack.index(t):]
            if len(cyc) > 2:
                errors.append('a circle of includes: ' + ' -> '.join(cyc + [t]))
        elif t in graph and not state.get(t):
            visit(t, stack)
    stack.pop()
    state[f] = 2
for f in files:
    if not state.get(f):
        visit(f, [])

for e in errors:
    print(e)
print(f'rooms: {len(files)} files, {sum(len(v) for v in graph.values())} includes, {len(errors)} breaks of the rule')
sys.exit(1 if errors else 0)
