// SPDX-License-Identifier: GPL-2.0-only
/*
 * SVG flame graph exporter: the folded stacks of snapshot_fold() (fold.h) drawn as a
 * self-contained SVG, on-CPU (samples) or off-CPU (microseconds blocked).
 *
 * Layout: the root frame "all" at the bottom, each stack's frames stacked upwards, the
 * width of a frame proportional to its count; siblings in name order, so the same
 * snapshot always gives the same picture, byte for byte. Frames narrower than
 * MIN_FRAME_PX are left out (their time stays in their parent). Each frame is a
 * <g class="f"> holding a <title> ("name (count unit, percent)", the tooltip), a <rect>
 * and a <text> label cut to the width of the frame.
 *
 * A small embedded script (no external resources) shows the hovered frame's title at
 * the bottom, zooms into a frame on click (its ancestors stretch to full width, what is
 * outside it hides) and resets the zoom from "Reset zoom" or a click on "all". Without
 * the script (an <img>, a viewer that runs none) the picture and tooltips still work.
 *
 * Names are XML-escaped; control characters and bytes that are not valid UTF-8 become
 * '?', so the file is well-formed XML whatever the task and symbol names hold.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "fold.h"
#include "hps.h"
#include "macro.h"

#define IMAGE_WIDTH 1200
#define PAD_X 10
#define PAD_TOP 50
#define PAD_BOTTOM 30
#define FRAME_HEIGHT 16
#define FONT_SIZE 12
#define FONT_WIDTH 0.59 /* average glyph width, in font sizes */
#define MIN_FRAME_PX 0.1

#define STR(x) #x
#define XSTR(x) STR(x)

struct node {
	const char *name; /* into a folded stack, not terminated */
	size_t len;
	uint32_t depth;
	uint64_t start, count;
};

/* ---- XML ---------------------------------------------------------------------------------- */

/* The length of the well-formed UTF-8 sequence at p (n bytes left) that XML allows, or 0. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
	size_t len;
	uint32_t cp, min;

	if (p[0] < 0x80)
		return 1;
	if ((p[0] & 0xe0) == 0xc0) {
		len = 2;
		cp = p[0] & 0x1f;
		min = 0x80;
	} else if ((p[0] & 0xf0) == 0xe0) {
		len = 3;
		cp = p[0] & 0x0f;
		min = 0x800;
	} else if ((p[0] & 0xf8) == 0xf0) {
		len = 4;
		cp = p[0] & 0x07;
		min = 0x10000;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff)
		return 0;
	return len;
}

/* Characters (code points, an invalid byte counting as one) in s[0..len). */
static size_t xml_chars(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0;

	for (size_t i = 0; i < len; n++) {
		size_t k = utf8_seq(p + i, len - i);

		i += k ? k : 1;
	}
	return n;
}

/* Writes at most max characters of s[0..len), escaped for text and attribute values. */
static void xml_put(FILE *f, const char *s, size_t len, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0, n = 0; i < len && n < max; n++) {
		size_t k = utf8_seq(p + i, len - i);

		if (!k || p[i] < 0x20 || p[i] == 0x7f) {
			fputc('?', f);
			i++;
			continue;
		}
		switch (p[i]) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&apos;", f);
			break;
		default:
			fwrite(p + i, 1, k, f);
		}
		i += k;
	}
}

static void xml_puts(FILE *f, const char *s)
{
	xml_put(f, s, strlen(s), SIZE_MAX);
}

/* ---- layout ------------------------------------------------------------------------------- */

/*
 * Frame-wise order: compare frame by frame, a stack before its extensions. Bytewise
 * order is not that ("a;b!" sorts between "a;b" and "a;b;c"); with ';' below every other
 * byte it is.
 */
static int cmp_framewise(const void *a, const void *b)
{
	const unsigned char *x = (const unsigned char *)((const struct folded_stack *)a)->frames;
	const unsigned char *y = (const unsigned char *)((const struct folded_stack *)b)->frames;

	for (;; x++, y++) {
		int cx = *x == ';' ? 1 : *x, cy = *y == ';' ? 1 : *y;

		if (cx != cy)
			return cx < cy ? -1 : 1;
		if (!cx)
			return 0;
	}
}

/* The frame after *pos in a folded stack: its start and length; false at the end. */
static bool next_frame(const char **pos, const char **ret_name, size_t *ret_len)
{
	const char *s = *pos, *e;

	if (!s)
		return false;
	e = strchr(s, ';');
	*ret_name = s;
	*ret_len = e ? (size_t)(e - s) : strlen(s);
	*pos = e ? e + 1 : NULL;
	return true;
}

static int cmp_node(const void *a, const void *b)
{
	const struct node *x = a, *y = b;

	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

struct layout {
	struct node *v;
	size_t n, cap;
	struct node *open; /* the frames of the current path; open[0] is "all" */
	size_t n_open, cap_open;
	uint32_t max_depth;
};

static int push_node(struct node **v, size_t *n, size_t *cap, const struct node *nd)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		struct node *p = reallocarray(*v, ncap, sizeof(*p));

		if (!p)
			return -ENOMEM;
		*v = p;
		*cap = ncap;
	}
	(*v)[(*n)++] = *nd;
	return 0;
}

/* Closes the open frames deeper than depth: they are complete. */
static int close_to(struct layout *l, size_t depth)
{
	while (l->n_open > depth) {
		int r = push_node(&l->v, &l->n, &l->cap, &l->open[--l->n_open]);

		if (r < 0)
			return r;
	}
	return 0;
}

/* Every frame of the flame graph, by depth then position. */
static int layout(const struct folded *fo, struct layout *l)
{
	struct node all = { .name = "all", .len = 3, .depth = 0, .start = 0, .count = fo->total };
	uint64_t x = 0;
	int r;

	r = push_node(&l->open, &l->n_open, &l->cap_open, &all);
	if (r < 0)
		return r;
	for (size_t i = 0; i < fo->n; i++) {
		const char *pos = fo->stacks[i].frames, *name;
		size_t len, depth = 1;

		/* follow the open path as long as the frames match, then open new ones */
		while (next_frame(&pos, &name, &len)) {
			if (depth < l->n_open && l->open[depth].len == len &&
			    !memcmp(l->open[depth].name, name, len)) {
				l->open[depth].count += fo->stacks[i].count;
			} else {
				struct node nd = { .name = name,
						   .len = len,
						   .depth = (uint32_t)depth,
						   .start = x,
						   .count = fo->stacks[i].count };

				r = close_to(l, depth);
				if (r >= 0)
					r = push_node(&l->open, &l->n_open, &l->cap_open, &nd);
				if (r < 0)
					return r;
				l->max_depth = MAX(l->max_depth, (uint32_t)depth);
			}
			depth++;
		}
		r = close_to(l, depth);
		if (r < 0)
			return r;
		x += fo->stacks[i].count;
	}
	r = close_to(l, 0);
	if (r < 0)
		return r;
	qsort_safe(l->v, l->n, sizeof(*l->v), cmp_node);
	return 0;
}

/* ---- drawing ------------------------------------------------------------------------------ */

static uint32_t name_hash(const char *s, size_t len)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

static bool is_kernel(const struct node *nd)
{
	return nd->len >= 4 && !memcmp(nd->name + nd->len - 4, "_[k]", 4);
}

static bool is_inlined(const struct node *nd)
{
	return nd->len >= 4 && !memcmp(nd->name + nd->len - 4, "_[i]", 4);
}

/* Warm colors on-CPU, cold ones off-CPU; kernel and inlined frames in hues of their own; roots gray. */
static void color(const struct node *nd, bool offcpu, char *buf, size_t len)
{
	uint32_t h = name_hash(nd->name, nd->len);
	unsigned int v1 = h & 0xff, v2 = (h >> 8) & 0xff, v3 = (h >> 16) & 0xff;
	unsigned int r, g, b;

	if (nd->depth <= 1) {
		r = g = b = 190 + v1 * 40 / 255;
	} else if (is_inlined(nd)) {
		/* aqua on-CPU, as flamegraph.pl colors inlined frames; violet off-CPU */
		r = offcpu ? 120 + v1 * 60 / 255 : v1 * 55 / 255;
		g = offcpu ? v2 * 60 / 255 : 165 + v2 * 55 / 255;
		b = offcpu ? 190 + v3 * 60 / 255 : 165 + v3 * 55 / 255;
	} else if (!offcpu && !is_kernel(nd)) {
		r = 205 + v1 * 50 / 255;
		g = v2 * 230 / 255;
		b = v3 * 55 / 255;
	} else if (!offcpu) {
		r = 220 + v1 * 35 / 255;
		g = 120 + v2 * 80 / 255;
		b = v3 * 30 / 255;
	} else if (!is_kernel(nd)) {
		r = v1 * 55 / 255;
		g = 80 + v2 * 110 / 255;
		b = 205 + v3 * 50 / 255;
	} else {
		r = v1 * 60 / 255;
		g = 170 + v2 * 60 / 255;
		b = 110 + v3 * 60 / 255;
	}
	snprintf(buf, len, "rgb(%u,%u,%u)", r, g, b);
}

/* clang-format off: one line of script per line of C */
static const char script[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"\"use strict\";\n"
	"var details, reset, frames, W = " XSTR(IMAGE_WIDTH) ", PAD = " XSTR(PAD_X) ", FONT = " XSTR(
		FONT_SIZE) ";\n"
			   "function part(g, tag) { return g.getElementsByTagName(tag)[0]; }\n"
			   "function init(evt) {\n"
			   "\tdetails = document.getElementById(\"details\").firstChild;\n"
			   "\treset = document.getElementById(\"reset\");\n"
			   "\tframes = document.getElementById(\"frames\").getElementsByTagName(\"g\");\n"
			   "\tfor (var i = 0; i < frames.length; i++) {\n"
			   "\t\tvar g = frames[i], r = part(g, \"rect\"), t = part(g, \"title\").textContent;\n"
			   "\t\tg.fx = +r.getAttribute(\"x\");\n"
			   "\t\tg.fw = +r.getAttribute(\"width\");\n"
			   "\t\tg.fy = +r.getAttribute(\"y\");\n"
			   "\t\tg.fname = t.substring(0, t.lastIndexOf(\" (\"));\n"
			   "\t\tg.onclick = function () { zoom(this); };\n"
			   "\t\tg.onmouseover = function () { details.nodeValue = part(this, \"title\").textContent; };\n"
			   "\t\tg.onmouseout = function () { details.nodeValue = \" \"; };\n"
			   "\t}\n"
			   "}\n"
			   "function place(g, x, w) {\n"
			   "\tvar r = part(g, \"rect\"), t = part(g, \"text\"), n = Math.floor((w - 6) / (FONT * 0.59)), s = g.fname;\n"
			   "\tr.setAttribute(\"x\", x.toFixed(2));\n"
			   "\tr.setAttribute(\"width\", w.toFixed(2));\n"
			   "\tt.setAttribute(\"x\", (x + 3).toFixed(2));\n"
			   "\tt.textContent = n < 3 ? \"\" : s.length > n ? s.substring(0, n - 2) + \"..\" : s;\n"
			   "\tg.style.display = \"\";\n"
			   "}\n"
			   "function zoom(z) {\n"
			   "\tvar e = 0.01, full = W - 2 * PAD, scale = full / z.fw;\n"
			   "\tif (z.fw >= full - e) { unzoom(); return; }\n"
			   "\tfor (var i = 0; i < frames.length; i++) {\n"
			   "\t\tvar g = frames[i];\n"
			   "\t\tif (g.fy > z.fy && g.fx <= z.fx + e && g.fx + g.fw >= z.fx + z.fw - e)\n"
			   "\t\t\tplace(g, PAD, full);\n"
			   "\t\telse if (g.fy <= z.fy && g.fx >= z.fx - e && g.fx + g.fw <= z.fx + z.fw + e)\n"
			   "\t\t\tplace(g, PAD + (g.fx - z.fx) * scale, g.fw * scale);\n"
			   "\t\telse\n"
			   "\t\t\tg.style.display = \"none\";\n"
			   "\t}\n"
			   "\treset.style.display = \"\";\n"
			   "}\n"
			   "function unzoom() {\n"
			   "\tfor (var i = 0; i < frames.length; i++)\n"
			   "\t\tplace(frames[i], frames[i].fx, frames[i].fw);\n"
			   "\treset.style.display = \"none\";\n"
			   "}\n"
			   "]]></script>\n";
/* clang-format on */

/* The process's name, for the title. */
static const char *process_comm(const Hostprof__Snapshot *s)
{
	for (size_t i = 0; i < s->n_processes; i++)
		if (s->processes[i]->pid == s->pid && s->processes[i]->comm)
			return s->processes[i]->comm;
	return "";
}

static void draw_frame(FILE *f, const struct node *nd, const struct folded *fo, bool offcpu, int height)
{
	double scale = (double)(IMAGE_WIDTH - 2 * PAD_X) / (double)fo->total;
	double x = PAD_X + (double)nd->start * scale, w = (double)nd->count * scale;
	double y = height - PAD_BOTTOM - (double)(nd->depth + 1) * FRAME_HEIGHT;
	size_t fit = w > 6 ? (size_t)((w - 6) / (FONT_SIZE * FONT_WIDTH)) : 0;
	size_t chars = xml_chars(nd->name, nd->len);
	char fill[32];

	color(nd, offcpu, fill, sizeof(fill));
	fputs("<g class=\"f\"><title>", f);
	xml_put(f, nd->name, nd->len, SIZE_MAX);
	fprintf(f, " (%" PRIu64 " %s, %.2f%%)</title>", nd->count,
		offcpu ? "us" : (nd->count == 1 ? "sample" : "samples"),
		100.0 * (double)nd->count / (double)fo->total);
	fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"%s\" rx=\"2\" ry=\"2\"/>",
		x, y, w, FRAME_HEIGHT - 1, fill);
	fprintf(f, "<text x=\"%.2f\" y=\"%.1f\">", x + 3, y + FRAME_HEIGHT - 4.5);
	if (fit >= 3 && chars <= fit) {
		xml_put(f, nd->name, nd->len, SIZE_MAX);
	} else if (fit >= 3) {
		xml_put(f, nd->name, nd->len, fit - 2);
		fputs("..", f);
	}
	fputs("</text></g>\n", f);
}

static void draw(FILE *f, const Hostprof__Snapshot *snap, const struct folded *fo, const struct layout *l,
		 bool offcpu)
{
	int height = PAD_TOP + (int)(l->max_depth + 1) * FRAME_HEIGHT + PAD_BOTTOM;

	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n");
	fprintf(f,
		"<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"xmlns=\"http://www.w3.org/2000/svg\" onload=\"init(evt)\">\n",
		IMAGE_WIDTH, height, IMAGE_WIDTH, height);
	fprintf(f,
		"<style>\n"
		"text { font-family: Verdana, sans-serif; font-size: %dpx; fill: #000; }\n"
		"#title { font-size: 17px; }\n"
		"#reset { cursor: pointer; }\n"
		".f:hover rect { stroke: #000; stroke-width: 0.5; cursor: pointer; }\n"
		"</style>\n",
		FONT_SIZE);
	fputs(script, f);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#f8f8f8\"/>\n", IMAGE_WIDTH,
		height);
	fprintf(f, "<text id=\"title\" x=\"%d\" y=\"24\" text-anchor=\"middle\">%s flame graph: ",
		IMAGE_WIDTH / 2, offcpu ? "Off-CPU" : "On-CPU");
	xml_puts(f, process_comm(snap));
	fprintf(f, " (pid %" PRIu32 ")</text>\n", snap->pid);
	fprintf(f, "<text x=\"%d\" y=\"42\" text-anchor=\"middle\">", IMAGE_WIDTH / 2);
	if (offcpu)
		fprintf(f, "%" PRIu64 " us blocked, over %.3f s</text>\n", fo->total,
			snap->end_ns > snap->start_ns ? (double)(snap->end_ns - snap->start_ns) / 1e9 : 0.0);
	else
		fprintf(f, "%" PRIu64 " samples at %" PRIu32 " Hz, over %.3f s</text>\n", fo->total,
			snap->sample_hz,
			snap->end_ns > snap->start_ns ? (double)(snap->end_ns - snap->start_ns) / 1e9 : 0.0);
	fprintf(f,
		"<text id=\"reset\" x=\"%d\" y=\"24\" style=\"display:none\" onclick=\"unzoom()\">Reset zoom</text>\n",
		PAD_X);
	fprintf(f, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", PAD_X, height - 10);
	fputs("<g id=\"frames\">\n", f);
	if (!fo->total)
		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", IMAGE_WIDTH / 2,
			height - PAD_BOTTOM - 4,
			offcpu ? "no off-CPU time in this window" : "no samples in this window");
	for (size_t i = 0; fo->total && i < l->n; i++) {
		double w = (double)l->v[i].count * (IMAGE_WIDTH - 2 * PAD_X) / (double)fo->total;

		if (w >= MIN_FRAME_PX)
			draw_frame(f, &l->v[i], fo, offcpu, height);
	}
	fputs("</g>\n</svg>\n", f);
}

int snapshot_export_svg(const Hostprof__Snapshot *snap, bool offcpu, FILE *out)
{
	struct layout l = {};
	struct folded fo;
	int r;

	r = hps_validate(snap);
	if (r < 0)
		return r;
	r = snapshot_fold(snap, offcpu, &fo);
	if (r < 0)
		return r;
	qsort_safe(fo.stacks, fo.n, sizeof(*fo.stacks), cmp_framewise);
	r = layout(&fo, &l);
	if (r >= 0) {
		errno = 0;
		draw(out, snap, &fo, &l, offcpu);
		if (fflush(out) == EOF || ferror(out))
			r = negative_errno();
	}
	free(l.v);
	free(l.open);
	folded_free(&fo);
	return r;
}
