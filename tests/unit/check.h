/*
 * check.h — the unit tests' whole framework: CHECK records a result and
 * says where a failure is; check_report prints "NAME: N passed, N failed"
 * (the line tests/run.sh adds up) and gives the exit status.
 */
#ifndef TIR_CHECK_H
#define TIR_CHECK_H

#include <math.h>
#include <stdio.h>

static int check_passed, check_failed;

#define CHECK(cond)                                                          \
	do {                                                                 \
		if (cond) {                                                  \
			check_passed++;                                      \
		} else {                                                     \
			check_failed++;                                      \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n",         \
				__FILE__, __LINE__, #cond);                  \
		}                                                            \
	} while (0)

#define CHECK_NEAR(a, b, tol)                                                \
	do {                                                                 \
		double ca_ = (a), cb_ = (b);                                 \
		if (fabs(ca_ - cb_) <= (tol) * (1 + fabs(cb_)) ||            \
		    (isnan(ca_) && isnan(cb_)) || ca_ == cb_) {              \
			check_passed++;                                      \
		} else {                                                     \
			check_failed++;                                      \
			fprintf(stderr, "%s:%d: CHECK_NEAR failed: %s = %.17g, %s = %.17g\n", \
				__FILE__, __LINE__, #a, ca_, #b, cb_);       \
		}                                                            \
	} while (0)

static inline int check_report(const char *name)
{
	printf("%s: %d passed, %d failed\n", name, check_passed, check_failed);
	return check_failed ? 1 : 0;
}

#endif
