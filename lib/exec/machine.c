/*
 * machine.c — the caches of the CPU tir runs on, read once, and the task
 * size every kernel that splits work over the pool derives from them.
 * Kernels take their block sizes from here (and from their shapes), never
 * from the thread count, so results stay the same for any --threads; they
 * may differ between machines, within numdiff's tolerance.  Not here: how
 * a kernel cuts its own work (matmul.c, nn.c, rows.c, vm.c).
 */
#include "exec.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* When neither sysconf nor sysfs knows: a common x86-64 core of the last
 * ten years (32 KiB 8-way L1d, 1 MiB L2, 64-byte lines).  L3 stays 0:
 * nothing is sized by it. */
#define DEFAULT_L1D ((int64_t)32 << 10)
#define DEFAULT_L1D_WAYS 8
#define DEFAULT_L2 ((int64_t)1 << 20)
#define DEFAULT_LINE 64

static struct tir_caches caches;
static pthread_once_t caches_once = PTHREAD_ONCE_INIT;

/* "48K", "2048K", "32M" or a plain number of bytes; 0 when unreadable. */
int64_t tir_machine_parse_size(const char *s)
{
	char *end;
	long long v = strtoll(s, &end, 10);
	if (end == s || v <= 0)
		return 0;
	switch (*end) {
	case 'K': case 'k': v <<= 10; end++; break;
	case 'M': case 'm': v <<= 20; end++; break;
	case 'G': case 'g': v <<= 30; end++; break;
	default: break;
	}
	return *end == '\0' || *end == '\n' ? (int64_t)v : 0;
}

/* One line of /sys/devices/system/cpu/cpu0/cache/indexI/NAME, or "". */
static void sys_read(int i, const char *name, char *buf, size_t len)
{
	char path[96];
	snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/%s", i, name);
	buf[0] = '\0';
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	if (!fgets(buf, (int)len, f))
		buf[0] = '\0';
	fclose(f);
}

/* What sysfs says of cpu0's data caches: size, ways and line by level. */
static void from_sysfs(int64_t size[4], int64_t *l1_ways, int64_t *line)
{
	for (int i = 0; i < 16; i++) {
		char lv[16], type[32], sz[32], ways[16], ln[16];
		sys_read(i, "level", lv, sizeof lv);
		if (!lv[0])
			break;
		sys_read(i, "type", type, sizeof type);
		if (!strncmp(type, "Instruction", 11))
			continue;
		int level = atoi(lv);
		if (level < 1 || level > 3)
			continue;
		sys_read(i, "size", sz, sizeof sz);
		size[level] = tir_machine_parse_size(sz);
		if (level == 1) {
			sys_read(i, "ways_of_associativity", ways, sizeof ways);
			*l1_ways = atoi(ways);
			sys_read(i, "coherency_line_size", ln, sizeof ln);
			*line = atoi(ln);
		}
	}
}

static int64_t from_sysconf(int name)
{
	long v = sysconf(name);
	return v > 0 ? (int64_t)v : 0;
}

/* sysconf's value when it is plausible (in [lo, hi]), else sysfs's, else
 * the default; *used notes which (1, 2, 4). */
static int64_t pick(int64_t conf, int64_t sys, int64_t dflt, int64_t lo, int64_t hi, unsigned *used)
{
	if (conf >= lo && conf <= hi) {
		*used |= 1;
		return conf;
	}
	if (sys >= lo && sys <= hi) {
		*used |= 2;
		return sys;
	}
	*used |= 4;
	return dflt;
}

static void caches_init(void)
{
	int64_t conf[4] = {0}, sys[4] = {0}, conf_ways = 0, conf_line = 0, sys_ways = 0, sys_line = 0;
#ifdef _SC_LEVEL1_DCACHE_SIZE
	conf[1] = from_sysconf(_SC_LEVEL1_DCACHE_SIZE);
	conf[2] = from_sysconf(_SC_LEVEL2_CACHE_SIZE);
	conf[3] = from_sysconf(_SC_LEVEL3_CACHE_SIZE);
	conf_ways = from_sysconf(_SC_LEVEL1_DCACHE_ASSOC);
	conf_line = from_sysconf(_SC_LEVEL1_DCACHE_LINESIZE);
#endif
	from_sysfs(sys, &sys_ways, &sys_line);
	unsigned used = 0;
	caches.l1d = pick(conf[1], sys[1], DEFAULT_L1D, (int64_t)4 << 10, (int64_t)4 << 20, &used);
	caches.l2 = pick(conf[2], sys[2], DEFAULT_L2, (int64_t)64 << 10, (int64_t)1 << 30, &used);
	if (caches.l2 < caches.l1d)     /* an odd report: L2 at least as large as L1d */
		caches.l2 = caches.l1d;
	caches.line = pick(conf_line, sys_line, DEFAULT_LINE, 16, 1024, &used);
	caches.l1d_ways = pick(conf_ways, sys_ways, DEFAULT_L1D_WAYS, 1, 64, &used);
	/* L3 is only shown: no default, and it does not count as a source */
	unsigned ignored = 0;
	caches.l3 = pick(conf[3], sys[3], 0, (int64_t)64 << 10, (int64_t)1 << 40, &ignored);
	snprintf(caches.source, sizeof caches.source, "%s%s%s%s%s", used & 1 ? "sysconf" : "",
		 (used & 1) && (used & 6) ? ", " : "", used & 2 ? "sysfs" : "",
		 (used & 2) && (used & 4) ? ", " : "", used & 4 ? "default" : "");
}

/* The caches, read at the first call; static storage. */
const struct tir_caches *tir_machine_caches(void)
{
	pthread_once(&caches_once, caches_init);
	return &caches;
}

static void add_size(char *buf, size_t len, const char *name, int64_t b)
{
	size_t n = strlen(buf);
	if (b >= ((int64_t)1 << 20) && b % ((int64_t)1 << 20) == 0)
		snprintf(buf + n, len - n, "%s %lld MiB", name, (long long)(b >> 20));
	else
		snprintf(buf + n, len - n, "%s %lld KiB", name, (long long)(b >> 10));
}

static char info[160];
static pthread_once_t info_once = PTHREAD_ONCE_INIT;

static void info_init(void)
{
	const struct tir_caches *c = tir_machine_caches();
	add_size(info, sizeof info, "L1d", c->l1d);
	add_size(info, sizeof info, ", L2", c->l2);
	if (c->l3)
		add_size(info, sizeof info, ", L3", c->l3);
	else
		snprintf(info + strlen(info), sizeof info - strlen(info), ", L3 unknown");
	snprintf(info + strlen(info), sizeof info - strlen(info), " (%s)", c->source);
}

/* "L1d 48 KiB, L2 2 MiB, L3 480 MiB (sysconf)"; static storage. */
const char *tir_machine_info(void)
{
	pthread_once(&info_once, info_init);
	return info;
}

/* Items per task for a kernel streaming n items of item_bytes each (rows
 * of a softmax, elements of a fused chain, random numbers).  The aim is
 * TIR_TASKS_WANT tasks.  A task is never smaller than L1d: below that the
 * cost of claiming a task and of starting its blocks (cold L1, the
 * prefetchers not yet running) is no longer small next to its work.  It is
 * never larger than L2, so a huge tensor makes more tasks rather than
 * longer ones: tasks cost next to nothing at that size, and more of them
 * balance better when cores are shared. */
int64_t tir_task_items(int64_t n, int64_t item_bytes)
{
	const struct tir_caches *c = tir_machine_caches();
	if (n <= 0 || item_bytes <= 0)
		return 1;
	double bytes = (double)n * (double)item_bytes / TIR_TASKS_WANT;
	if (bytes < (double)c->l1d)
		bytes = (double)c->l1d;
	if (bytes > (double)c->l2)
		bytes = (double)c->l2;
	int64_t items = (int64_t)(bytes / (double)item_bytes);
	return items < 1 ? 1 : items > n ? n : items;
}

bool tir_machine_lib_path(const char *env, const char *so, char *path, size_t cap)
{
	const char *e = getenv(env);
	if (e && *e) {
		snprintf(path, cap, "%s", e);
		return true;
	}
	if (cap < strlen(so) + 2)
		return false;
	ssize_t n = readlink("/proc/self/exe", path, cap - strlen(so) - 1);
	if (n <= 0)
		return false;
	path[n] = 0;
	char *slash = strrchr(path, '/');
	strcpy(slash ? slash + 1 : path, so);
	return true;
}
