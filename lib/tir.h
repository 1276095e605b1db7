/*
 * tir.h — the public interface of libtir: a textual tensor IR, parsed with a
 * whitelisted grammar, type-checked, and run on the CPU.
 *
 * The library never prints and never exits; the CLI (cli/main.c) owns all
 * I/O and exit codes.  A typical client, in full:
 *
 *     struct tir_program *p = tir_program_new();
 *     if (tir_program_parse(p, "model.tir", src, len, 0) != 0) {
 *         for (int i = 0; i < tir_program_ndiags(p); i++) {
 *             char *msg = tir_err_render(tir_program_diag(p, i));
 *             fputs(msg, stderr);
 *             free(msg);
 *         }
 *     }
 *     struct tir_exec *x = tir_exec_new(p);
 *     struct tir_err err = {0};
 *     if (tir_exec_run(x, 0, NULL, 0, &err) == 0)        // every print
 *         for (size_t i = 0; i < tir_exec_nresults(x); i++) {
 *             char *s = tir_tensor_format(tir_exec_result(x, i),
 *                                         tir_exec_header(x, i), 6, false);
 *             fputs(s, stdout);
 *             free(s);
 *         }
 *     tir_exec_free(x);
 *     tir_program_free(p);
 *
 * Ownership is said above each function: "new" means the caller frees it
 * with the named function; "borrowed" means valid until the owner goes.
 */
#ifndef TIR_H
#define TIR_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TIR_VERSION "0.1.0"

/* Element types.  The numbers are on the wire (protocol.md): new ones go
 * last.  f16, bf16, i8, u8 and i16 are storage types: ops compute in
 * their wide type (tir_dtype_wide: f32, i32) and round or wrap on store.
 * Promotion is tir_dtype_promote's table (docs/language.md). */
enum tir_dtype {
	TIR_DTYPE_BOOL,
	TIR_DTYPE_I32,
	TIR_DTYPE_I64,
	TIR_DTYPE_F32,
	TIR_DTYPE_F64,
	TIR_DTYPE_F16,
	TIR_DTYPE_BF16,
	TIR_DTYPE_I8,
	TIR_DTYPE_U8,
	TIR_DTYPE_I16,
	TIR_DTYPE_COUNT
};

/* Limits on what untrusted text may ask for. */
#define TIR_MAX_RANK 8
#define TIR_MAX_ELEMS (INT64_C(1) << 32)       /* elements in one tensor */
#define TIR_MAX_DIM (INT64_C(1) << 32)         /* one axis */
#define TIR_MAX_DEPTH 200                      /* expression nesting */
#define TIR_MAX_SOURCE (INT64_C(256) << 20)    /* bytes of program text */
#define TIR_MAX_DIAGS 20                       /* errors reported per parse */
#define TIR_MAX_EXPANDED 1000000               /* tokens loops and calls read again, per parse */
#define TIR_MAX_NEST 32                        /* loops and calls being expanded at once */
#define TIR_MAX_FN_PARAMS 16                   /* parameters of a function */
#define TIR_MAX_NOTES 6                        /* notes of one error (the calls and loops it is in) */

/* Error codes returned (negated) by library functions. */
enum tir_code {
	TIR_OK = 0,
	TIR_ESYNTAX = 1,   /* the program text */
	TIR_ETYPE = 2,     /* shapes, dtypes, signatures */
	TIR_EDATA = 3,     /* a file or input that is malformed or missing */
	TIR_ERUNTIME = 4,  /* a computation failed (division by zero, bad index) */
	TIR_ENOMEM = 5,
	TIR_EUNSUPPORTED = 6,
	TIR_EINCOMPLETE = 7, /* input ended inside an open bracket (REPL: read more) */
	TIR_ENET = 8,      /* the remote could not be reached or broke protocol */
	TIR_EINTERRUPT = 9,
	TIR_EBUDGET = 10     /* a tensor would pass the memory budget (tir serve --max-memory) */
};

struct tir_source;   /* one chunk of program text (a file, a REPL line) */

/* A position in program text.  line and col are 1-based; col counts
 * UTF-8 code points. */
struct tir_loc {
	const struct tir_source *src;
	uint32_t off;
	uint32_t line;
	uint32_t col;
};

/* A note under an error: where the text at fault was reached from (a
 * call of a function, an iteration of a loop), innermost first. */
struct tir_note {
	struct tir_loc loc;
	char msg[160];
};

/* One error.  Caller-owned; the last argument of fallible functions. */
struct tir_err {
	int code;              /* enum tir_code, 0 when no error */
	struct tir_loc loc;    /* loc.src is NULL when there is no position */
	char msg[512];
	int nnotes;            /* notes[0..nnotes) are set (tir_errf clears them) */
	struct tir_note notes[TIR_MAX_NOTES];
};

struct tir_program;

/* returns: new, free with tir_program_free. */
struct tir_program *tir_program_new(void);
void tir_program_free(struct tir_program *p);

/* Parse flags. */
#define TIR_PARSE_REPL 1u   /* a bare expression is a print */
/* src stays as it is, where it is, until p is freed (a file the caller
 * has mapped): the program reads it in place (its messages quote it)
 * rather than keep a copy */
#define TIR_PARSE_BORROW 2u

/* Parse and type-check `src` (need not be NUL-terminated), appending its
 * statements to p; bindings from earlier calls stay visible.  The text is
 * copied (not with TIR_PARSE_BORROW).  A statement with an error binds nothing and adds nothing to the
 * graph; parsing goes on with the next statement so that independent
 * errors are all reported.  In a file a failed binding poisons its name
 * (later uses are not reported again); in the REPL the old binding stays.
 * returns: 0, or -code of the first error; all errors are in the diags. */
int tir_program_parse(struct tir_program *p, const char *name,
		      const char *src, size_t len, unsigned flags);

/* As tir_program_parse, for a chunk whose first line is line first_line
 * of its input (a REPL session, a piped script): errors give that line. */
int tir_program_parse_at(struct tir_program *p, const char *name, const char *src,
			 size_t len, unsigned flags, uint32_t first_line);

/* Whether text ends inside an open bracket or brace (the REPL reads on). */
int tir_text_incomplete(const char *src, size_t len);

/* Diagnostics of the last parse.  borrowed, valid until the next parse. */
int tir_program_ndiags(const struct tir_program *p);
const struct tir_err *tir_program_diag(const struct tir_program *p, int i);
/* How many errors were found in all (ndiags stops at TIR_MAX_DIAGS). */
int tir_program_nerrors(const struct tir_program *p);

/* Render `file:line:col: error: msg`, the source line and a caret, then
 * each note the same way (`file:line:col: note: msg`).
 * returns: new string, free with free(). */
char *tir_err_render(const struct tir_err *e);

/* The canonical text of the whole program: one op per line, explicit
 * types; it parses back to the same graph.  returns: new, free(). */
char *tir_program_format(const struct tir_program *p);

/* Resolve the type of load("path"[, "name"]) while checking.  The CLI
 * reads the file's header; a server refuses.  Fill *dtype, *rank, shape
 * and return 0, or fill err and return -code. */
typedef int (*tir_load_type_fn)(void *ud, const char *path, const char *name,
				enum tir_dtype *dtype, int *rank, int64_t *shape,
				struct tir_err *err);
void tir_program_set_loader(struct tir_program *p, tir_load_type_fn fn, void *ud);
/* The program runs with n remotes (remote:0 .. remote:n-1): `to` a device
 * past them is an error when checked.  Unset, only the run says so. */
void tir_program_set_remotes(struct tir_program *p, int n);
/* The loader of a program that may read files (the CLI's): the type from
 * the .npy or .safetensors header.  ud is unused. */
int tir_load_type_from_file(void *ud, const char *path, const char *name, enum tir_dtype *dtype,
			    int *rank, int64_t *shape, struct tir_err *err);

/* ---- what a program holds (the REPL asks) ---- */

/* Statements parsed so far: tir_exec_run from this computes only what
 * is parsed after now. */
size_t tir_program_nstmts(const struct tir_program *p);
/* Whether a statement from `from` on prints. */
bool tir_program_prints_from(const struct tir_program *p, size_t from);
/* Whether NAME is bound to a value now (by `input NAME` or `NAME = ...`). */
bool tir_program_binds(const struct tir_program *p, const char *name);
/* Whether NAME is declared by an `input` statement. */
bool tir_program_is_input(const struct tir_program *p, const char *name);
/* The bound name closest to s[0..n), for "did you mean"; NULL if none is
 * close.  borrowed, valid until the program changes. */
const char *tir_program_suggest(const struct tir_program *p, const char *s, size_t n);
/* The names a line may use, for completion, each once to fn (borrowed
 * for the call): the ops a program may call (p unused), the functions
 * defined, the names bound to a value, the inputs declared. */
enum tir_names { TIR_NAMES_OPS, TIR_NAMES_FUNCS, TIR_NAMES_VALUES, TIR_NAMES_INPUTS };
typedef void (*tir_name_fn)(void *ud, const char *name);
void tir_program_names(const struct tir_program *p, enum tir_names kind, tir_name_fn fn, void *ud);
/* Each name bound now, once, at the statement that bound it last (a
 * function's own names left out), in statement order, to fn. */
struct tir_var {
	const char *name;           /* borrowed */
	char type[160];             /* "f32[64, 10]" */
	bool input;                 /* bound by `input NAME: T` */
	char device[24];            /* where it lives: "cpu", "remote:1", or "any"
				     * (placed nowhere: made where it is read) */
};
typedef void (*tir_var_fn)(void *ud, const struct tir_var *v);
void tir_program_vars(const struct tir_program *p, tir_var_fn fn, void *ud);
/* The lines of tir_program_format's text that the value bound to NAME
 * depends on, in order (the latest definition of each name, as when the
 * program ran).  returns: new, free(); NULL when out of memory. */
char *tir_program_format_deps(const struct tir_program *p, const char *name);

/* ---- running ---- */

struct tir_exec;     /* runs a program's graph; keeps inputs and results */
struct tir_tensor;   /* a computed value (lib/exec/exec.h) */

/* returns: new, free with tir_exec_free; borrows p, which must outlive it. */
struct tir_exec *tir_exec_new(struct tir_program *p);
void tir_exec_free(struct tir_exec *x);
/* Give `input NAME` its value from a .npy or .safetensors file (its only
 * tensor, or of several the one called NAME); the type must match the
 * declaration exactly. */
int tir_exec_input_file(struct tir_exec *x, const char *name, const char *path, struct tir_err *err);
/* Compute every print of the statements from from_stmt on, and the values
 * bound to names[0..nnames) (for --save); nothing else.  On a runtime error
 * err->loc is the op that failed. */
int tir_exec_run(struct tir_exec *x, size_t from_stmt, const char *const *names, int nnames,
		 struct tir_err *err);
/* The last run's printed values and headers, in order; then the named
 * values.  borrowed, valid until the next run. */
size_t tir_exec_nresults(const struct tir_exec *x);
const char *tir_exec_header(const struct tir_exec *x, size_t i);
const struct tir_tensor *tir_exec_result(const struct tir_exec *x, size_t i);
const struct tir_tensor *tir_exec_named(const struct tir_exec *x, size_t i);

/* Stop runs with -TIR_EINTERRUPT ("interrupted") once *flag is non-zero
 * (a SIGINT handler sets it, or a server's watch; the caller clears it):
 * between nodes, and inside a kernel between its tasks (a big matmul's
 * tiles between their column panels), so that a stop takes effect within
 * milliseconds; a node cut short is never kept as a value.  NULL: never. */
void tir_exec_set_interrupt(struct tir_exec *x, volatile sig_atomic_t *flag);
/* Keep the values computed for nodes bound to a name, for later runs to
 * reuse (the REPL); a value goes when its name is rebound or an input it
 * was computed from is given again.  Off (the default) frees them all. */
void tir_exec_keep_named(struct tir_exec *x, bool on);
/* Whether the value NAME is bound to now is held: an input's given value,
 * or kept by a device of x (here, or in a remote's session). */
bool tir_exec_has_value(const struct tir_exec *x, const char *name);

struct tir_exec_stats {
	double plan_ms, run_ms;
	size_t peak_bytes;      /* most tensor memory held at once during the run */
	size_t mapped_bytes;    /* most file data mapped at once (inputs, load): not in peak_bytes */
	size_t plan_peak_bytes; /* the plan's, simulated before it ran (only under a
				 * memory budget; 0 otherwise): errs low */
	int nops, nkernels;
	bool plan_cached;       /* the plan came from the cache (same structure as before) */
};
const struct tir_exec_stats *tir_exec_stats(const struct tir_exec *x);
/* Fuse chains of ops into kernels (the default), or run one reference
 * kernel per op (--no-fuse).  Results are the same either way. */
void tir_exec_set_fuse(struct tir_exec *x, bool fuse);
/* The program runs once (tir run): a plan is made for the run and not
 * kept for later runs of the same structure (its signature, the cache's
 * copy: a program of 100,000 statements spent a fifth of its plan on
 * them).  Results are the same either way. */
void tir_exec_set_once(struct tir_exec *x, bool once);
/* Time every kernel of the next runs; tir_exec_profile gives the table of
 * the last one (kernel, ms, MiB moved, GFLOP/s).  returns: new, free(). */
void tir_exec_set_profile(struct tir_exec *x, bool on);
char *tir_exec_profile(const struct tir_exec *x);
/* Note the next runs' kernels and the pool threads' spans (tir run
 * --trace): tir_exec_trace_json gives the last run as Chrome trace events
 * (JSON that Perfetto and chrome://tracing open): on thread 0 the parse
 * (parse_ms, before the run), the plan and each kernel (args: MiB moved,
 * GFLOP, tasks), on thread 1 + k pool slot k's span of each kernel's
 * tasks.  A remote run instead: on thread 0 the parse and the batch (made
 * and its blobs named), on thread 1 each round trip (method, path,
 * status, bytes up and down), each upload (its blob, bytes, MiB/s) and
 * the fetch of the results within their requests, on thread 2 the
 * server's plan (with its explain text) and run, from the times it
 * reports, ending where its reply began.  returns: new, free(). */
void tir_exec_set_trace(struct tir_exec *x, bool on);
char *tir_exec_trace_json(const struct tir_exec *x, double parse_ms);
/* jansson (the JSON of --trace and of safetensors headers) is loaded at its
 * first use: 0 once it is, else -code and err says why (err may be NULL). */
int tir_json_ready(struct tir_err *err);
/* Where a run is, for a progress line (tir run on a terminal).  fn gets
 * it on the running thread: a local run at the start of each kernel, a
 * remote run at each request's start and while its bytes move (libcurl's
 * pace: often while they flow, about once a second while it waits).  fn
 * must be quick; it may keep what it needs (p is borrowed). */
enum tir_step {
	TIR_STEP_KERNEL,        /* kernel k of n (local) */
	TIR_STEP_UPLOAD,        /* blob k of n going up: bytes of total */
	TIR_STEP_WAIT,          /* a request sent, its reply not begun */
	TIR_STEP_RESULTS,       /* a reply coming: bytes (of total, 0 unknown) */
};
struct tir_progress {
	enum tir_step step;
	int k, n;
	uint64_t bytes, total;
	double step_ms;         /* when this step began (ms, CLOCK_MONOTONIC) */
};
typedef void (*tir_progress_fn)(void *ctx, const struct tir_progress *p);
void tir_exec_set_progress(struct tir_exec *x, tir_progress_fn fn, void *ctx);
/* The last run's plan: one kernel a line.  borrowed, valid until the next run. */
const char *tir_exec_explain(struct tir_exec *x);
/* The plan of what the program prints (name NULL), or of the value bound
 * to name, as a Graphviz digraph: each kernel a cluster of its ops,
 * nothing computed.  returns: new, free(); NULL with err set. */
char *tir_exec_dot(struct tir_exec *x, const char *name, struct tir_err *err);

/* The result block of docs/language.md ("Printed results"): "HEADER: f32[2, 3]" and the values, floats
 * with `precision` significant digits, summarized past 1000 elements
 * unless full.  returns: new, free(). */
char *tir_tensor_format(const struct tir_tensor *t, const char *header, int precision, bool full);
/* Write t as a .npy file (written whole, then renamed into place). */
int tir_tensor_save(const char *path, const struct tir_tensor *t, struct tir_err *err);
/* Write n tensors to path: a path ending in ".safetensors" gets one
 * .safetensors file holding all of them under names[] (unique), any other
 * path a .npy file of the one tensor (n must be 1).  Written whole, then
 * renamed into place. */
int tir_tensors_save(const char *path, const char *const *names, const struct tir_tensor *const *ts, int n,
		     struct tir_err *err);
/* Whether path names a .safetensors file (by its extension), for saving. */
bool tir_path_is_safetensors(const char *path);
/* What `tir inspect FILE` prints: the file's format, then a table of its
 * tensors (name, dtype as the file names it, shape, bytes, offset from
 * the start of the file, the tir dtype it loads as or "-"), from the
 * header alone; every tensor checked (no overlaps, offsets and sizes
 * that agree).  returns: new, free(); NULL with err set. */
char *tir_file_inspect(const char *path, struct tir_err *err);
/* Give back the memory kept for reuse by freed tensors. */
void tir_release_caches(void);
/* A budget for the tensor bytes this process holds at once (0: none): a
 * run whose plan would pass it is refused before it allocates, at the op
 * of its largest value (TIR_EBUDGET), as tir serve --max-memory does. */
void tir_set_max_memory(size_t bytes);
/* Three quarters of the memory available now (MemAvailable of
 * /proc/meminfo; of the machine's memory when that cannot be read): the
 * budget of tir run and tir repl unless --max-memory says otherwise. */
size_t tir_default_max_memory(void);
/* Whether load and inputs map their file's data rather than read it
 * (default on): a tensor of at least 64 KiB whose data is aligned for its
 * dtype, in a dtype read as stored, is then the file's pages, read-only,
 * read in by the kernel as kernels touch them and never copied.  The file
 * must stay as it is while the value lives: rewritten in place, the value
 * changes; truncated, a touch of a page past its end is SIGBUS.  A
 * program that keeps values for long (the REPL) turns it off. */
void tir_set_file_mapping(bool on);
/* Bytes of files mapped by tensors now (async-signal-safe: a SIGBUS
 * handler may ask whether a mapping could be the cause). */
size_t tir_mapped_bytes(void);
/* Threads for the engine's kernels, the caller's included; n < 1: one per
 * processor (the default).  A product on OpenBLAS runs on as many of
 * OpenBLAS's threads, tir's pool idle meanwhile. */
void tir_set_threads(int n);
/* The vector path of tir's own kernels, one per process: "avx512", "avx2",
 * "sse2" or "scalar" (portable C), the best this CPU has or, when the
 * environment variable TIR_VMATH names one, the best at or below it.
 * Chosen at the first call or the first kernel run.  static storage. */
const char *tir_vector_path(void);
/* What --version says of the kernels, each static storage: the gemm that
 * runs float products ("tir avx512 (f32 12x32, ...)", "openblas (OpenBLAS
 * 0.3.21, core Zen)"), OpenBLAS's build and core (or that it is not
 * loaded: asking never loads it), and the caches ("L1d 48 KiB, L2 2 MiB,
 * L3 480 MiB (sysconf)"). */
const char *tir_gemm_info(void);
const char *tir_blas_info(void);
/* tir_blas_info after loading OpenBLAS (tir --version), or why it could
 * not be loaded. */
const char *tir_blas_version(void);
/* Which gemm runs float products (f32, f64; others always on tir's):
 * "tir", "openblas", or NULL, "" or "auto" for the machine's default (tir's
 * where it has a tuned path, AVX2 or AVX-512, OpenBLAS elsewhere).  Wins
 * over the environment variable TIR_GEMM (same names).  returns 0 or
 * -TIR_EUNSUPPORTED for another name. */
int tir_set_gemm(const char *name, struct tir_err *err);
/* 0 when TIR_GEMM is unset or names a gemm; else -TIR_EUNSUPPORTED with
 * err saying so (the CLI checks it first, as TIR_VMATH). */
int tir_gemm_check(struct tir_err *err);
const char *tir_machine_info(void);
/* 0 when TIR_VMATH is unset, empty, "auto" or a path's name; else
 * -TIR_EUNSUPPORTED with err saying so (the run would take the best path:
 * a client checks first, as the CLI does). */
int tir_vector_path_check(struct tir_err *err);

/* ---- remote: another tir runs the graph (lib/net, docs/protocol.md) ---- */

/* The version of the wire protocol (docs/protocol.md) this tir speaks:
 * `tir serve` says it when listening, and /v1/info answers it. */
#define TIR_PROTOCOL 4

struct tir_remote;   /* one server: a keep-alive connection and a session */
/* (opened, used and closed through tir_net()'s table, at the end) */

/* What the last run sent and received. */
struct tir_remote_stats {
	double net_ms;              /* wall time in HTTP requests */
	int round_trips;
	uint64_t bytes_up, bytes_down;
	int blobs_cached, blobs_sent;   /* blobs the server held already / was sent */
	uint64_t blob_bytes_sent;
	bool graph_sent;            /* the batch text went up (the server lacked it) */
};

/* Run x's graph on r from now on (x's device list: the CPU, then r);
 * NULL runs it here again.  The program is still parsed and checked here,
 * `load` and inputs are read here and travel as data; results and
 * statistics come back into x as from a local run.  A failure to reach r
 * or a broken reply is -TIR_ENET.  borrowed: r must outlive its use by x.
 * returns 0 or -TIR_ENOMEM. */
int tir_exec_set_remote(struct tir_exec *x, struct tir_remote *r, struct tir_err *err);
/* The same for several: r[k] is remote:k (n = 0: none).  A value placed
 * nowhere runs on remote:0; `to(x, "remote:k")` places one (see the
 * language's "Devices").  The program's `to`s are checked against n at
 * run time; tir_program_set_remotes says n while parsing.
 * returns 0, or -TIR_ENOMEM, -TIR_EUNSUPPORTED past TIR_MAX_REMOTES. */
#define TIR_MAX_REMOTES 63
int tir_exec_set_remotes(struct tir_exec *x, struct tir_remote *const *r, int n, struct tir_err *err);
/* `tir run --local`: remote:0 .. remote:n-1 are n more CPU devices of this
 * process, so that a program written for servers (its to, shard and
 * all_reduce, placed as they would be) runs here alone, values moved
 * between them in memory and collectives made of moves and elementwise
 * ops.  For debugging: the results are a run on servers'.  0 or -code. */
int tir_exec_set_local(struct tir_exec *x, int n, struct tir_err *err);

/* `tir serve`: an HTTP server running batches from remote clients. */
struct tir_serve_tenant {
	const char *name;           /* 1..64 of [A-Za-z0-9_.-], for the log and errors */
	const char *token;          /* its Bearer token */
	int max_sessions;           /* sessions it may have open (0: --max-sessions) */
	uint64_t max_inflight;      /* bytes of its bodies received at once (0: --max-inflight) */
	uint64_t max_memory;        /* its share of max_memory (0: all of it with one tenant, half
				     * with several) */
	int max_batches;            /* its batches running at once (0: all the compute threads with
				     * one tenant, half of them, at least 1, with several) */
	bool admin;                 /* its /metrics shows every tenant's figures, not only its own */
};

struct tir_serve_opts {
	const char *host;           /* address to bind, "127.0.0.1" when NULL */
	int port;                   /* 0: any free port (reported via *bound_port) */
	const char *token;          /* required Bearer token, or NULL */
	uint64_t max_body;          /* bytes of one request body */
	int max_sessions;
	int session_ttl;            /* seconds a session may idle */
	int session_lease;          /* seconds a leased session may go without a request or a
				     * renewal from its client (0: 30) */
	int max_connections_per_address; /* connections one client address (IPv6: /64) may hold (0: 32) */
	int header_timeout;         /* seconds a connection has to send a request's head (0: 10) */
	uint64_t blob_cache;        /* bytes of blobs kept, least recently used evicted */
	uint64_t max_inflight;      /* bytes of request bodies being received at once (0: the
				     * larger of 2 x max_body and blob_cache) */
	int threads;                /* compute threads (0: the default) */
	/* bytes of pages kept faulted in for the tensors uploads bring
	 * (0: 256 MiB, at most a quarter of max_memory; below 0: none) */
	int64_t upload_reserve;
	/* bytes of tensors held at once: blobs, kept values and batches
	 * together (0: three quarters of the machine's memory, or of the
	 * cgroup's limit when that is lower) */
	uint64_t max_memory;
	/* seconds a batch may run before it is stopped, inside a kernel if
	 * need be (0: 300; negative: no limit) */
	int max_batch_seconds;
	/* HTTPS: files of the certificate (chain) and its key, PEM; both or
	 * neither (NULL: plain HTTP) */
	const char *tls_cert, *tls_key;
	/* --tokens: tenants, each with its own token, sessions and view of
	 * the blobs (then token is not used); NULL: one tenant, of token */
	const struct tir_serve_tenant *tenants;
	int ntenants;
	/* one line per request (no newline); NULL: silent */
	void (*log)(void *ud, const char *line);
	void *log_ud;
	int *bound_port;            /* set once listening, if not NULL */
	/* called once, with log_ud and the port, when the server is listening; NULL: not */
	void (*listening)(void *ud, int port);
	/* seconds an import (POST /v1/sessions/ID/import) may take to fetch
	 * its value from the other server (0: 60) */
	int transfer_seconds;
	/* set before listening is called when the server is a rank of a
	 * group (started under mpirun; docs/groups.md), else left */
	int *group_rank, *group_size;
	/* ops one batch text may make, its loops and calls expanded (0: 40000) */
	int max_ops;
	/* bytes the parsed batch texts kept may hold, those in use counted (0: 64 MiB) */
	uint64_t graph_cache;
	/* the servers an import may fetch from: addresses and CIDRs, comma
	 * separated (NULL: the group's members and loopback) */
	const char *peers;
};
/* The op table as text, one op a line with its signature.  returns: new, free(). */
char *tir_ops_help(void);

/* Small utilities the library and its clients share.  Grow *p, an array
 * of *cap elements of elem bytes, to hold need of them (doubling): 0, or
 * -TIR_ENOMEM (*p as it was). */
int tir_grow(void **p, size_t *cap, size_t need, size_t elem);
/* A growing string: s[0..n), NUL-terminated; oom once an add failed. */
struct tir_str {
	char *s;
	size_t n, cap;
	bool oom;
};
void tir_str_add(struct tir_str *b, const char *s, size_t n);
void tir_str_addf(struct tir_str *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tir_str_free(struct tir_str *b);
/* CLOCK_MONOTONIC in milliseconds: the one clock of timings and deadlines. */
double tir_now_ms(void);

/* A dtype's name ("f32", ...; "?" for none), and the dtype s[0..n) names
 * (-1 when none). */
const char *tir_dtype_name(enum tir_dtype t);
int tir_dtype_from_name(const char *s, size_t n);
size_t tir_dtype_size(enum tir_dtype t);
bool tir_dtype_is_float(enum tir_dtype t);   /* f16, bf16, f32, f64 */
/* f32 or f64: a float type kernels compute in (tir_dtype_wide of any float),
 * as a compute dtype or a kernel's operand is.  Inline: kernels ask it of
 * every chunk. */
static inline bool tir_dtype_is_wide_float(enum tir_dtype t)
{
	return t == TIR_DTYPE_F32 || t == TIR_DTYPE_F64;
}
bool tir_dtype_is_int(enum tir_dtype t);     /* i8, u8, i16, i32, i64 */
/* The type t computes in: f32 for f16 and bf16, i32 for i8, u8 and i16,
 * else t itself. */
enum tir_dtype tir_dtype_wide(enum tir_dtype t);
/* The type a op b computes and stores in (neither a weak literal). */
enum tir_dtype tir_dtype_promote(enum tir_dtype a, enum tir_dtype b);

/* ---- the network part: one table (lib/net, built as libtir-net.so) ----
 * The client of `tir serve` and the server itself are libtir-net.so,
 * loaded from next to the tir binary (TIR_NET_LIB=PATH: from that file)
 * the first time a remote or the server is used, so that a tir that uses
 * neither never loads libcurl, libmicrohttpd and libcrypto.  The library
 * exports one function, TIR_NET_API_ENTRY, which returns this table;
 * tir_net() loads it and checks its version and size, and the engine
 * and the CLI call lib/net only through the table.  Any change to the
 * members (their order, a type, one more) raises TIR_NET_API_VERSION. */
#define TIR_NET_API_VERSION 1
#define TIR_NET_API_ENTRY "tir_net_api"

struct tir_node;            /* lib/ir/ir.h's */
struct tir_remote_result;   /* lib/engine/engine.h's */

struct tir_net_api {
	uint32_t version;           /* TIR_NET_API_VERSION of the library's build */
	uint32_t size;              /* sizeof (struct tir_net_api) of the library's build */

	/* Talk to `tir serve` at HOST:PORT (the session is made at the first
	 * run).  token: sent as "Authorization: Bearer TOKEN", or NULL.
	 * Nothing is sent yet.  returns: new, free with remote_close (which
	 * deletes the session on the server); NULL with err filled
	 * (-TIR_ENET, a bad address). */
	struct tir_remote *(*remote_open)(const char *hostport, const char *token, struct tir_err *err);
	void (*remote_close)(struct tir_remote *r);
	/* "HOST:PORT" as given.  borrowed. */
	const char *(*remote_name)(const struct tir_remote *r);
	/* Make the session now (one round trip), so that a wrong address, a
	 * wrong token or another protocol is said at once.  returns 0 or -code. */
	int (*remote_connect)(struct tir_remote *r, struct tir_err *err);
	/* The program the values were kept for is gone (the REPL's .reset):
	 * the next run drops them on the server. */
	void (*remote_forget)(struct tir_remote *r);
	/* What the last run sent and received.  borrowed. */
	const struct tir_remote_stats *(*remote_stats)(const struct tir_remote *r);
	/* Open hostport, and when it is a rank of a group (its /v1/info says
	 * so; asked within 5 s, a server that cannot be reached at all taken
	 * as a lone one) every rank of the group, in rank order, at the
	 * addresses the group gives, the one given among them, each asked
	 * whether it is that rank of that group (docs/groups.md).  out: at
	 * most max remotes, each new (remote_close).  returns how many (1 for
	 * a lone server); -code with err filled (a group of more than max, an
	 * address that is none); 0 with err filled when the server was reached
	 * and cannot be used: it did not answer /v1/info (a rank whose group
	 * is forming answers nothing), or a member of its group is missing. */
	int (*remote_group_open)(const char *hostport, const char *token, struct tir_remote **out, int max,
				 struct tir_err *err);
	/* Serve until *stop becomes non-zero (a SIGINT/SIGTERM handler sets
	 * it), then finish the requests under way and return 0; or fill err
	 * and return -code when it cannot start (the port is taken, a bad
	 * address). */
	int (*serve)(const struct tir_serve_opts *o, volatile sig_atomic_t *stop, struct tir_err *err);

	/* -- the executor's remote device (lib/engine/remote.c) -- */

	/* Compute targets[0..ntargets) of x's program on r.  The values come
	 * back in each target node's dtype and shape.  A program or data
	 * error is reported at its source position, as a local run would. */
	int (*remote_run)(struct tir_remote *r, struct tir_exec *x, struct tir_node *const *targets,
			  size_t ntargets, struct tir_remote_result *res, struct tir_err *err);
	/* Whether r's session holds the value of node id of x's program. */
	bool (*remote_holds)(const struct tir_remote *r, const struct tir_exec *x, uint32_t id);
	/* Bring what r's session holds up to date with x's program and inputs
	 * as they are now (a rebound name's value, one computed from an input
	 * given again, go), so that remote_holds is right for the run about to
	 * be planned; r's statistics (remote_stats) start from zero, to add up
	 * over that run's batches.  returns 0 or -TIR_ENOMEM. */
	int (*remote_sync)(struct tir_remote *r, const struct tir_exec *x, struct tir_err *err);

	/* Server to server (docs/protocol.md, "Server to server"): a value one
	 * remote's session holds goes to another's directly, never through
	 * this client. */

	/* "http://HOST:PORT" or "https://HOST:PORT": r's server as this client
	 * reaches it.  borrowed, valid until remote_close. */
	const char *(*remote_base_url)(const struct tir_remote *r);
	/* A capability for the value of node id of x's program that r's
	 * session holds (remote_holds, after the held values are brought up to
	 * date with x's inputs): one use, by a server holding a token of the
	 * tenant r's token is of, while r's session lives.  cap: its 64 hex
	 * digits; blob: the value's blob name (lib/net/net.h), which the
	 * receiver checks.  returns 0; -TIR_EDATA when r holds no such value;
	 * -TIR_ENET when the server cannot be reached or refuses (the message
	 * says what it said). */
	int (*remote_export)(struct tir_remote *r, const struct tir_exec *x, uint32_t id, char cap[65],
			     char blob[65], struct tir_err *err);
	/* Have r's server fetch node id's value from from's server with cap
	 * and blob (from remote_export on from), check it, and keep it in r's
	 * session (made now if need be) under node id's key: then
	 * remote_holds(r, x, id) is true and r's next batches read it as a
	 * leaf.  from's address is sent as this client reaches it, with from's
	 * token.  The value is stale on r, as one r computed, once an input it
	 * was computed from is given again.  x must keep values (the REPL's,
	 * tir_exec_keep_named).  A capability is used up by the attempt,
	 * whatever its outcome.  returns 0; -TIR_EDATA for a node no session
	 * keeps; -TIR_ENET when r cannot be reached or the transfer fails (r's
	 * message: the source unreachable, its answer, a blob that does not
	 * hash to its name). */
	int (*remote_import)(struct tir_remote *r, const struct tir_exec *x, uint32_t id,
			     const struct tir_remote *from, const char *cap, const char *blob, struct tir_err *err);
	/* The MPI group r's server is a rank of (docs/groups.md): its id (32
	 * hex digits), with r's rank in *rank; NULL for a lone server. */
	const char *(*remote_group)(const struct tir_remote *r, int *rank);
	/* r's rank's part of one all_reduce of its group's ranks[0..n) (each a
	 * rank of r's group, 0 among them): op (sum mean max min prod) of node
	 * src_id's value, which every one of those ranks' sessions holds, kept
	 * in r's session under node dst_id's key, as an import's is.  The
	 * group's ranks run it as one MPI_Allreduce once each of them was
	 * asked with the same key (32 hex digits, new for each), within the
	 * servers' --transfer-seconds.  The caller asks every rank at once.
	 * returns 0; -TIR_EDATA when r holds no such value; -TIR_ENET when r
	 * cannot be reached or the collective fails (r's message says why: a
	 * rank that was not asked in time, values of other sizes, the
	 * deadline). */
	int (*remote_all_reduce)(struct tir_remote *r, struct tir_exec *x, const char *key, const char *op,
				 const int *ranks, int n, uint32_t src_id, uint32_t dst_id, struct tir_err *err);
};

/* The network part's table, libtir-net.so loaded and checked on the first
 * call (any thread).  returns: borrowed, for the life of the process; or
 * NULL with err filled (-TIR_EUNSUPPORTED: the library will not load, or
 * is of another version or size than this tir's: err names the file and
 * both). */
const struct tir_net_api *tir_net(struct tir_err *err);
/* A program that links lib/net in itself (the tests, the benchmarks)
 * hands its table (lib/net/api.h's TIR_NET_API_ENTRY) over before its first
 * remote: tir_net() then returns it, checked as a loaded one is, and loads
 * nothing.  Once tir_net() has answered, the table cannot change.
 * returns 0, or -TIR_EUNSUPPORTED with err filled (too late, or a table
 * of another version or size). */
int tir_net_use(const struct tir_net_api *api, struct tir_err *err);

/* ---- ONNX import (lib/onnx, docs/onnx.md) ---- */

struct tir_regex;    /* a compiled PCRE2 pattern (tir_regex_new) */

/* A symbolic dimension fixed (--dim NAME=N), or an input's shape given
 * (the file of --input: its ONNX name and shape fix its symbolic dims). */
struct tir_onnx_dim {
	const char *name;
	int64_t value;
};
struct tir_onnx_shape {
	const char *name;
	int rank;
	int64_t shape[TIR_MAX_RANK];
	const char *path;           /* its file (.npy): a small integer input that
				     * the model uses as a shape or axes is read */
	int32_t onnx_type;          /* the ONNX element type of its .pb file, or 0 */
};
struct tir_onnx_opts {
	const struct tir_onnx_dim *dims;
	int ndims;
	const struct tir_onnx_shape *inputs;
	int ninputs;
	/* --rename REGEX=REPLACEMENT, applied in order to each ONNX name
	 * before it is made a valid identifier */
	struct tir_regex *const *renames;
	const char *const *replacements;
	int nrenames;
	const char *weights_file;   /* where the initializers are written (.safetensors) */
	const char *weights_ref;    /* the path load() names (NULL: weights_file) */
	bool no_prints;             /* no `print` of the outputs (the REPL's .load) */
};
/* An imported model: the program's text and the ONNX names it binds. */
struct tir_onnx_model {
	char *text;                 /* the tir program (canonical form, with comments) */
	size_t nnames;
	char **onnx_names;          /* every tensor name of the graph... */
	char **tir_names;           /* ...and the tir name bound to it */
	size_t ninputs, noutputs;   /* the graph's inputs and outputs, as ONNX names */
	char **inputs, **outputs;
	int32_t *output_types;      /* each output's ONNX element type (0: not said) */
	int32_t *input_types;       /* each input's, as inputs[] */
};
/* Import the ONNX model at path (docs/onnx.md); writes the weights file.
 * returns 0 and fills *out (free with tir_onnx_model_free), or -code with
 * err filled: an unsupported op lists every one of the model. */
int tir_onnx_import(const char *path, const struct tir_onnx_opts *o, struct tir_onnx_model *out,
		    struct tir_err *err);
void tir_onnx_model_free(struct tir_onnx_model *m);
/* The tir name bound to ONNX tensor `onnx`, or NULL.  borrowed. */
const char *tir_onnx_name(const struct tir_onnx_model *m, const char *onnx);
/* Whether path names an ONNX model or TensorProto file, by extension. */
bool tir_path_is_onnx(const char *path);
bool tir_path_is_pb(const char *path);
/* Read the TensorProto file pb and write it as the .npy file npy; its
 * shape into *rank/shape and its ONNX element type into *onnx_type when
 * not NULL (uint16, uint32, uint64 are written as i32, i64, i64). */
int tir_onnx_pb_to_npy(const char *pb, const char *npy, int *rank, int64_t *shape, int32_t *onnx_type,
		       struct tir_err *err);
/* Output `onnx` of m, if the model declares it uint16, uint32 or uint64
 * (which tir holds in i32 or i64), written to the .npy file path in that
 * type, each value taken modulo 2^bits: returns 0, or -code with err
 * filled; 1 (nothing written) for any other output or path. */
int tir_onnx_save_unsigned(const struct tir_onnx_model *m, const char *onnx, const struct tir_tensor *t,
			   const char *path, struct tir_err *err);
/* Input `onnx` of m, if the model declares it bfloat16 and given_type (the
 * type of its TensorProto file) is uint16: the values of npy (that file as
 * tir_onnx_pb_to_npy wrote it) are bf16 bit patterns, as ONNX's test data
 * stores bf16; written to path (.safetensors) as that bf16 tensor.
 * returns 0, or -code with err filled; 1 (nothing written) otherwise. */
int tir_onnx_bf16_input(const struct tir_onnx_model *m, const char *onnx, int32_t given_type, const char *npy,
			const char *path, struct tir_err *err);

/* A PCRE2 pattern (JIT-compiled where PCRE2 has it).  A bad pattern:
 * NULL, err->msg says why and err->loc.col is its offset (1-based).
 * returns: new, free with tir_regex_free. */
struct tir_regex *tir_regex_new(const char *pattern, struct tir_err *err);
void tir_regex_free(struct tir_regex *re);
/* Whether the pattern matches somewhere in s. */
bool tir_regex_match(const struct tir_regex *re, const char *s);
/* s with every match replaced by repl ($1, ${name}); returns: new, free(),
 * or NULL with err filled. */
char *tir_regex_subst(const struct tir_regex *re, const char *s, const char *repl, struct tir_err *err);

#endif
