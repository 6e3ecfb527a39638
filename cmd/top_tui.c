// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl top: the interactive screen (ncurses), painted from the same text view that batch mode prints. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curses.h>

#include "core/clock.h"
#include "core/out.h"
#include "rdmactl.h"
#include "top_view.h"

/* One snapshot's text view, cut into lines. */
struct lines {
	char *buf;
	char **v;
	size_t n;
	struct top_layout lay;
};

static void free_lines(struct lines *l)
{
	free(l->buf);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* The text view of s into l: printed through the output layer into memory, then cut at the newlines. */
static int render(const struct top_snap *s, const struct top_view *v, struct lines *l)
{
	bool json = out_is_json(), pretty = out_is_pretty();
	size_t len = 0, i;
	char *p;
	FILE *f;

	memset(l, 0, sizeof(*l));
	f = open_memstream(&l->buf, &len);
	if (!f)
		return -errno;
	out_init(f, false, false);
	top_print(s, v, &l->lay);
	out_init(NULL, json, pretty);
	if (fclose(f) || !l->buf) {
		free_lines(l);
		return -ENOMEM;
	}
	l->v = calloc(l->lay.lines ? l->lay.lines : 1, sizeof(*l->v));
	if (!l->v) {
		free_lines(l);
		return -ENOMEM;
	}
	for (p = l->buf, i = 0; i < l->lay.lines && *p; i++) {
		l->v[i] = p;
		p += strcspn(p, "\n");
		if (*p)
			*p++ = '\0';
	}
	l->n = i;
	return 0;
}

static void draw(const struct top_snap *s, const struct top_view *v)
{
	struct lines l;
	int y = 0, maxy = LINES, maxx = COLS;
	size_t k, ndev_tot = s->ndevs;
	size_t room;

	erase();
	if (render(s, v, &l)) {
		refresh();
		return;
	}
	/* Header, then as many rows as fit above the per-device totals at the bottom. */
	for (k = 0; k < l.lay.rows && k < l.n && y < maxy; k++, y++) {
		if (k == l.lay.header)
			attron(A_REVERSE);
		mvaddnstr(y, 0, l.v[k], maxx);
		if (k == l.lay.header) {
			for (int x = (int)strlen(l.v[k]); x < maxx; x++)
				addch(' ');
			attroff(A_REVERSE);
		}
	}
	room = maxy > y + (int)ndev_tot ? (size_t)(maxy - y) - ndev_tot : 0;
	for (k = 0; k < l.lay.nrows && k < room && l.lay.rows + k < l.n; k++, y++)
		mvaddnstr(y, 0, l.v[l.lay.rows + k], maxx);
	attron(A_BOLD);
	for (k = l.lay.rows + l.lay.nrows; k < l.n && y < maxy; k++, y++)
		mvaddnstr(y, 0, l.v[k], maxx);
	attroff(A_BOLD);
	refresh();
	free_lines(&l);
}

int top_screen(struct top_ctx *t, const struct top_filter *f, struct top_snap *first, struct top_view *v,
	       double delay)
{
	struct top_snap s = *first;
	double next;
	SCREEN *scr;
	int ch, err = 0;

	if (delay < 0.1)
		delay = 0.1;
	scr = newterm(NULL, stdout, stdin);
	if (!scr) {
		pr_err("cannot start the screen: unknown terminal '%s' (use -b for batch mode)",
		       getenv("TERM") ? getenv("TERM") : "");
		top_snap_free(&s);
		return EXIT_FAIL;
	}
	cbreak();
	noecho();
	curs_set(0);
	keypad(stdscr, TRUE);
	v->screen = true;
	draw(&s, v);
	next = clock_mono_s() + delay;
	while (!top_exiting) {
		double left = next - clock_mono_s();

		timeout(left > 0 ? (int)(left * 1000) + 1 : 0);
		ch = getch();
		if (ch == 'q' || ch == 'Q')
			break;
		if (ch == 's' || ch == '>' || ch == 'S' || ch == '<') {
			v->key = (v->key + (ch == 's' || ch == '>' ? 1 : TOP_NKEYS - 1)) % TOP_NKEYS;
			top_sort(&s, v->key, v->reverse);
			draw(&s, v);
			continue;
		}
		if (ch == 'r') {
			v->reverse = !v->reverse;
			top_sort(&s, v->key, v->reverse);
			draw(&s, v);
			continue;
		}
		if (ch == KEY_RESIZE) {
			draw(&s, v);
			continue;
		}
		if (ch == ERR && clock_mono_s() < next)
			continue;
		top_snap_free(&s);
		err = top_take(t, f, &s, v, true);
		if (err)
			break;
		draw(&s, v);
		next = clock_mono_s() + delay;
	}
	top_snap_free(&s);
	endwin();
	delscreen(scr);
	if (err) {
		/* Only now: while the screen is up, stderr would be painted over. */
		top_take_error(t, err);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}
