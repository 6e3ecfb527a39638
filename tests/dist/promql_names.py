#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The metric names a PromQL expression reads, one a line (tests/dist.bats): strings, label matchers, ranges,
# grouping clauses and Grafana's $variables taken out, an identifier that no "(" follows and that is no
# keyword is a metric name. Usage: promql_names.py EXPR... (names), promql_names.py --promql EXPR (the
# PromQL of a Grafana query: label_values(SELECTOR, LABEL) is SELECTOR).
import re
import sys

KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "bool",
            "offset", "inf", "nan"}


def promql(expr):
    """Grafana's label_values(SELECTOR, LABEL) reads SELECTOR."""
    m = re.fullmatch(r'\s*label_values\((.*),\s*\w+\s*\)\s*', expr, re.S)
    return m.group(1) if m else expr


def names(expr):
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', promql(expr))         # strings (label values, label_values' args)
    e = re.sub(r'\{[^}]*\}', ' ', e)                       # label matchers
    e = re.sub(r'\[[^\]]*\]', ' ', e)                      # ranges and subqueries
    e = re.sub(r'\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)', ' ', e)
    e = re.sub(r'\$\{?\w+\}?', ' ', e)                     # Grafana variables
    out = []
    for m in re.finditer(r'[A-Za-z_:][A-Za-z0-9_:]*', e):
        rest = e[m.end():].lstrip()
        w = m.group(0)
        if rest.startswith("(") or w.lower() in KEYWORDS:
            continue
        if m.start() > 0 and (e[m.start() - 1].isdigit() or e[m.start() - 1] == "."):
            continue                                       # 1e3, 5m
        out.append(w)
    return out


if sys.argv[1:2] == ["--promql"]:
    print(promql(sys.argv[2]))
    sys.exit(0)
for arg in sys.argv[1:]:
    for n in names(arg):
        print(n)
