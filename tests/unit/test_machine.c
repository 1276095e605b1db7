/*
 * test_machine.c — machine.c: sysfs's cache sizes parsed, the caches read
 * plausible, tir_task_items within its bounds, and the pool's count of
 * offered tasks (--profile's tasks) the same at any thread count, nested
 * runs not counted.  tests/suites/tasks.sh checks the counts kernels give.
 */
#include "exec/exec.h"
#include "check.h"

#include <string.h>

static void test_parse(void)
{
	CHECK(tir_machine_parse_size("48K") == 48 << 10);
	CHECK(tir_machine_parse_size("2048K\n") == 2 << 20);
	CHECK(tir_machine_parse_size("1M") == 1 << 20);
	CHECK(tir_machine_parse_size("32768") == 32768);
	CHECK(tir_machine_parse_size("") == 0);
	CHECK(tir_machine_parse_size("K") == 0);
	CHECK(tir_machine_parse_size("-4K") == 0);
	CHECK(tir_machine_parse_size("12Q") == 0);
	CHECK(tir_machine_parse_size("4K extra") == 0);
}

static void test_caches(void)
{
	const struct tir_caches *c = tir_machine_caches();
	CHECK(c == tir_machine_caches());
	CHECK(c->l1d >= 4 << 10 && c->l2 >= c->l1d);
	CHECK(c->line >= 16 && c->l1d_ways >= 1);
	CHECK(c->source[0] != '\0');
	const char *info = tir_machine_info();
	CHECK(!strncmp(info, "L1d ", 4) && strstr(info, ", L2 ") && strstr(info, ", L3 "));
}

static void test_task_items(void)
{
	const struct tir_caches *c = tir_machine_caches();
	int64_t n = (int64_t)1 << 24, items = tir_task_items(n, 4);
	CHECK(items * 4 >= c->l1d - 4 && items * 4 <= c->l2);
	CHECK((n + items - 1) / items >= (n * 4 / c->l2 < TIR_TASKS_WANT ? n * 4 / c->l2 : TIR_TASKS_WANT));
	CHECK(tir_task_items(10, 4) == 10);              /* all of a small tensor */
	CHECK(tir_task_items(100, c->l2 * 2) == 1);      /* rows beyond L2: one a task */
	CHECK(tir_task_items(0, 4) == 1);
	/* a huge tensor: tasks of L2, so more than TIR_TASKS_WANT of them */
	int64_t big = c->l2 * TIR_TASKS_WANT * 4;
	CHECK(tir_task_items(big, 1) == c->l2);
}

static void nop_task(void *ctx, int64_t t)
{
	(void)t;
	if (ctx)                     /* a nested run: not counted */
		tir_pool_run(5, nop_task, NULL);
}

static void test_offered(void)
{
	int threads[] = { 1, 3 };
	for (int i = 0; i < 2; i++) {
		tir_pool_set_threads(threads[i]);
		int64_t before = tir_pool_offered();
		tir_pool_run(7, nop_task, NULL);
		tir_pool_run(0, nop_task, NULL);
		CHECK(tir_pool_offered() - before == 7);
		before = tir_pool_offered();
		tir_pool_run(4, nop_task, (void *)1);
		CHECK(tir_pool_offered() - before == 4);
	}
	tir_pool_shutdown();
}

int main(void)
{
	test_parse();
	test_caches();
	test_task_items();
	test_offered();
	return check_report("test_machine");
}
