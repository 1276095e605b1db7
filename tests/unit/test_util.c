/*
 * test_util.c — the small utilities lib/tir.h gives every layer: the one
 * clock (tir_now_ms), the two float predicates on dtypes (any float, and
 * the floats kernels compute in), and the dtype names both ways.
 */
#include "tir.h"
#include "check.h"

#include <string.h>
#include <time.h>

static void test_clock(void)
{
	double t0 = tir_now_ms(), last = t0;
	bool steady = true;
	for (int i = 0; i < 1000; i++) {
		double t = tir_now_ms();
		steady &= t >= last;
		last = t;
	}
	CHECK(steady);
	CHECK(t0 > 0);
	struct timespec ts = {0, 20 * 1000 * 1000}; /* 20 ms */
	nanosleep(&ts, NULL);
	double slept = tir_now_ms() - t0;
	CHECK(slept >= 19.9);
	CHECK(slept < 60e3); /* milliseconds, not microseconds or nanoseconds */
}

static void test_dtypes(void)
{
	/* by name, as SPEC.md lists them: any float, and the floats kernels
	 * compute in (tir_dtype_wide of every float) */
	static const struct {
		const char *name;
		bool is_float, wide_float, is_int;
	} want[] = {
		{"bool", false, false, false}, {"i32", false, false, true}, {"i64", false, false, true},
		{"f32", true, true, false},    {"f64", true, true, false},  {"f16", true, false, false},
		{"bf16", true, false, false},  {"i8", false, false, true},  {"u8", false, false, true},
		{"i16", false, false, true},
	};
	CHECK(sizeof want / sizeof want[0] == TIR_DTYPE_COUNT);
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		int dt = tir_dtype_from_name(want[i].name, strlen(want[i].name));
		CHECK(dt >= 0 && dt < TIR_DTYPE_COUNT);
		if (dt < 0)
			continue;
		enum tir_dtype t = (enum tir_dtype)dt;
		CHECK(!strcmp(tir_dtype_name(t), want[i].name));
		CHECK(tir_dtype_is_float(t) == want[i].is_float);
		CHECK(tir_dtype_is_wide_float(t) == want[i].wide_float);
		CHECK(tir_dtype_is_int(t) == want[i].is_int);
		/* a wide float is a float, and each float widens to one */
		CHECK(!tir_dtype_is_wide_float(t) || tir_dtype_is_float(t));
		CHECK(!tir_dtype_is_float(t) || tir_dtype_is_wide_float(tir_dtype_wide(t)));
	}
	CHECK(tir_dtype_from_name("f8", 2) == -1);
	CHECK(tir_dtype_from_name("f32x", 4) == -1);
	CHECK(!strcmp(tir_dtype_name(TIR_DTYPE_COUNT), "?"));
	CHECK(!tir_dtype_is_float(TIR_DTYPE_COUNT) && !tir_dtype_is_wide_float(TIR_DTYPE_COUNT));
}

int main(void)
{
	test_clock();
	test_dtypes();
	return check_report("test_util");
}
