/*
 * icd_bench: dmabridge's OpenCL benchmark, run through the ICD loader.
 *
 * It measures, on one OpenCL device, the operations the memory extensions are
 * judged on, and libc's equivalents in the same process at the same time:
 *
 *   cl_svm_alloc_free_4k_ns       clSVMAlloc(4 KiB) + clSVMFree, one store between
 *   cl_usm_host_alloc_free_4k_ns  clHostMemAllocINTEL(4 KiB) + clMemFreeINTEL, one store between (USM only)
 *   cl_usm_device_alloc_free_4k_ns     clDeviceMemAllocINTEL(4 KiB) + clMemFreeINTEL, one thread (device USM only)
 *   cl_usm_device_alloc_free_4k_2t_ns  the same on two threads at once, one context: wall time per pair of
 *                                      both (half the one-thread figure if the two threads scale perfectly)
 *   libc_malloc_free_64_ns        malloc(64) + one store + free, one thread: the reference for the two-thread
 *   libc_malloc_free_64_2t_ns     scaling: the same on two threads at once (libc's per-thread cache, so the
 *                                 threads share nothing: how far two threads scale on the machine right now)
 *   libc_alloc_free_4k_ns         aligned_alloc(128, 4 KiB) + one store + free
 *   cl_svm_memcpy_64b_ns          blocking clEnqueueSVMMemcpy of 64 bytes, enqueue -> complete
 *   cl_usm_memcpy_64b_ns          blocking clEnqueueMemcpyINTEL of 64 bytes (USM only)
 *   cl_svm_memcpy_64mib_gbps      blocking clEnqueueSVMMemcpy of 64 MiB
 *   cl_usm_memcpy_64mib_gbps      blocking clEnqueueMemcpyINTEL of 64 MiB, USM host memory (USM only)
 *   libc_memcpy_64mib_gbps        memcpy of 64 MiB
 *   cl_svm_fill_64mib_gbps        clEnqueueSVMMemFill of 64 MiB with a 4-byte pattern, waited for
 *   cl_usm_fill_64mib_gbps        clEnqueueMemFillINTEL, the same (USM only)
 *   libc_memset_64mib_gbps        memset of 64 MiB
 *   cl_kernel_empty_round_trip_ns an empty OpenCL C kernel: clEnqueueNDRangeKernel + clFinish
 *   cl_kernel_copy_64mib_gbps     an OpenCL C copy kernel (uint4 per work-item), 64 MiB of SVM memory
 *   cl_kernel_saxpy_64mib_gbps    an OpenCL C saxpy (y = a*x + y, float4 per work-item) over 16 Mi floats
 *                                 (64 MiB of y; x another 64 MiB), SVM memory
 *   cl_yuyv_1080p_ns              examples/cl/yuyv_to_rgba.cl (OpenCL C) on a 1920x1080 YUYV frame, SVM
 *   cl_yuyv_builtin_1080p_ns      the built-in yuyv_to_rgba_strided on the same frame (dmabridge only); its
 *                                 bytes are checked against the OpenCL C kernel's
 *
 * Two ways to run it:
 *
 *   icd_bench [--platform SUBSTRING]
 *       One device: the first with coarse-grain SVM on the first platform whose
 *       name contains SUBSTRING (any platform without it), among the vendors the
 *       loader finds (OCL_ICD_VENDORS or /etc/OpenCL/vendors). Prints `# ...`
 *       lines saying what ran, then one `name value` line per figure (ns, or GB/s
 *       with GB = 1e9 bytes). driver/dmabridge/benches/common/peer.rs runs it so.
 *
 *   icd_bench --kernel-rounds N NAME=VENDOR NAME=VENDOR
 *       The kernel rows only (kernels from source: empty, copy, saxpy, 1080p YUYV->RGBA), the two vendors
 *       in turn N times, each figure of both and their ratio per round, then the median ratio and its
 *       range: on a shared machine one pair of runs says little. `make bench` runs it for dmabridge
 *       against PoCL used directly (its own SVM memory, the same kernels).
 *
 *   icd_bench --table NAME=VENDOR [NAME=VENDOR ...]
 *       Each VENDOR (an .icd file, or a directory of them, as OCL_ICD_VENDORS
 *       takes) is measured in a child process of its own, one after the other
 *       (so that no runtime's threads disturb another's figures, and a runtime
 *       that fails or crashes costs only its column), and the figures are
 *       printed side by side, each with its ratio to libc's from the same
 *       child. `make bench` runs it so for dmabridge, PoCL and Intel's runtime.
 *
 * The two-thread rows run 31 short rounds (one thread, then two) and also print, over the rounds in which every thread ran for 95 % of the time by its own CPU
 * time ("both cores": on a shared machine a thread often waits for a CPU), how many they were and the
 * two-thread throughput over the one-thread throughput of each such round (`both_cores` lines).
 *
 * Each figure is the best of several timed runs (the machines are shared: the
 * least disturbed run is the one to compare), after an untimed warm-up run (the
 * first run of a fresh process pays for page faults, lazy binding and cold
 * caches: it was 40 % slower than the next ones); the allocation rows also
 * print their spread over the timed runs as `spread NAME BEST WORST` lines. Every OpenCL result is checked; a
 * failure prints the call that failed and its error code on stderr and exits
 * with status 1. The copied and filled bytes are checked too, so a figure is
 * never that of an operation that did nothing.
 *
 * Build: cc -O2 -o icd_bench icd_bench.c -lOpenCL
 */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <CL/cl_ext.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BIG ((size_t)64 << 20) /* the bandwidth rows: 64 MiB */
#define SMALL_ALLOC 4096       /* the allocation rows: 4 KiB */
#define SMALL_COPY 64          /* the round-trip rows: 64 bytes */
#define ALLOC_ITERS 20000      /* pairs per timed run (and per thread in the two-thread rows): short, so that
                                  the best of the runs finds one that no other process interrupted */
#define COPY_ITERS 20000       /* copies per timed run */
#define SMALL_RUNS 7           /* timed runs of the small rows */
#define BIG_RUNS 10            /* timed runs of the 64 MiB rows (one operation each) */
#define CHILD_TIMEOUT 300      /* seconds a --table child may take */
#define KERNEL_ITERS 2000      /* empty-kernel launches per timed run */
#define YUYV_RUNS 20           /* timed conversions of the 1080p frame, each kernel */

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double min_d(double a, double b) { return a < b ? a : b; }
static double max_d(double a, double b) { return a > b ? a : b; }

/* Keeps the compiler from dropping stores it cannot see being read. */
static void clobber(void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }

static void fail(const char *what, cl_int err) {
    fprintf(stderr, "icd_bench: %s failed: OpenCL error %d\n", what, (int)err);
    exit(1);
}

#define CHECK(call)                        \
    do {                                   \
        cl_int err_ = (call);              \
        if (err_ != CL_SUCCESS) {          \
            fail(#call, err_);             \
        }                                  \
    } while (0)

/* The figures, in output order. */
enum {
    SVM_ALLOC,
    USM_ALLOC,
    LIBC_ALLOC,
    USM_DEV_ALLOC,
    USM_DEV_ALLOC_2T,
    LIBC_SMALL_ALLOC,
    LIBC_SMALL_ALLOC_2T,
    SVM_COPY64,
    USM_COPY64,
    SVM_COPY_BIG,
    USM_COPY_BIG,
    LIBC_COPY_BIG,
    SVM_FILL_BIG,
    USM_FILL_BIG,
    LIBC_FILL_BIG,
    KERNEL_EMPTY,
    KERNEL_COPY_BIG,
    KERNEL_SAXPY_BIG,
    YUYV_CL,
    YUYV_BUILTIN,
    NFIG
};
static const char *const fig_name[NFIG] = {
    "cl_svm_alloc_free_4k_ns",  "cl_usm_host_alloc_free_4k_ns", "libc_alloc_free_4k_ns",
    "cl_usm_device_alloc_free_4k_ns", "cl_usm_device_alloc_free_4k_2t_ns",
    "libc_malloc_free_64_ns",   "libc_malloc_free_64_2t_ns",
    "cl_svm_memcpy_64b_ns",     "cl_usm_memcpy_64b_ns",         "cl_svm_memcpy_64mib_gbps",
    "cl_usm_memcpy_64mib_gbps", "libc_memcpy_64mib_gbps",       "cl_svm_fill_64mib_gbps",
    "cl_usm_fill_64mib_gbps",   "libc_memset_64mib_gbps",       "cl_kernel_empty_round_trip_ns",
    "cl_kernel_copy_64mib_gbps", "cl_kernel_saxpy_64mib_gbps", "cl_yuyv_1080p_ns",
    "cl_yuyv_builtin_1080p_ns",
};

/* USM entry points, from clGetExtensionFunctionAddressForPlatform. */
typedef void *(CL_API_CALL *host_alloc_fn)(cl_context, const cl_mem_properties_intel *, size_t, cl_uint, cl_int *);
typedef void *(CL_API_CALL *device_alloc_fn)(cl_context, cl_device_id, const cl_mem_properties_intel *, size_t,
                                             cl_uint, cl_int *);
typedef cl_int(CL_API_CALL *mem_free_fn)(cl_context, void *);
typedef cl_int(CL_API_CALL *memcpy_fn)(cl_command_queue, cl_bool, void *, const void *, size_t, cl_uint,
                                       const cl_event *, cl_event *);
typedef cl_int(CL_API_CALL *fill_fn)(cl_command_queue, void *, const void *, size_t, size_t, cl_uint, const cl_event *,
                                     cl_event *);

struct usm {
    host_alloc_fn host_alloc;
    device_alloc_fn device_alloc; /* NULL if the device has no device USM */
    mem_free_fn mem_free;
    memcpy_fn memcpy;
    fill_fn fill;
};

/* A device with coarse-grain SVM: the first one on the first platform whose name contains `want` (any if NULL). */
static void pick_device(const char *want, cl_platform_id *platform, cl_device_id *device) {
    cl_uint np = 0;
    cl_platform_id platforms[16];
    CHECK(clGetPlatformIDs(16, platforms, &np));
    if (np > 16) {
        np = 16;
    }
    for (cl_uint i = 0; i < np; i++) {
        char name[256] = "";
        if (want != NULL && (clGetPlatformInfo(platforms[i], CL_PLATFORM_NAME, sizeof name - 1, name, NULL) !=
                                 CL_SUCCESS ||
                             strstr(name, want) == NULL)) {
            continue;
        }
        cl_uint nd = 0;
        cl_device_id devices[16];
        if (clGetDeviceIDs(platforms[i], CL_DEVICE_TYPE_ALL, 16, devices, &nd) != CL_SUCCESS) {
            continue;
        }
        if (nd > 16) {
            nd = 16;
        }
        for (cl_uint j = 0; j < nd; j++) {
            cl_device_svm_capabilities svm = 0;
            if (clGetDeviceInfo(devices[j], CL_DEVICE_SVM_CAPABILITIES, sizeof svm, &svm, NULL) == CL_SUCCESS &&
                (svm & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER)) {
                *platform = platforms[i];
                *device = devices[j];
                return;
            }
        }
    }
    fprintf(stderr, "icd_bench: clGetDeviceIDs: no OpenCL device with coarse-grain SVM on %u platform(s)%s%s\n",
            (unsigned)np, want ? " named like " : "", want ? want : "");
    exit(1);
}

static void print_info(const char *label, cl_platform_id p, cl_device_id d, cl_uint param) {
    char name[256] = "?";
    cl_int err = p ? clGetPlatformInfo(p, param, sizeof name - 1, name, NULL)
                   : clGetDeviceInfo(d, param, sizeof name - 1, name, NULL);
    if (err != CL_SUCCESS) {
        strcpy(name, "?");
    }
    printf("# %s: %s\n", label, name);
}

/* USM host allocations, if the device reports any host USM capability and the platform has the entry points. */
static int find_usm(cl_platform_id platform, cl_device_id device, struct usm *u) {
    char ext[8192] = "";
    if (clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, sizeof ext - 1, ext, NULL) != CL_SUCCESS ||
        strstr(ext, "cl_intel_unified_shared_memory") == NULL) {
        return 0;
    }
    cl_device_unified_shared_memory_capabilities_intel caps = 0;
    if (clGetDeviceInfo(device, CL_DEVICE_HOST_MEM_CAPABILITIES_INTEL, sizeof caps, &caps, NULL) != CL_SUCCESS ||
        !(caps & CL_UNIFIED_SHARED_MEMORY_ACCESS_INTEL)) {
        return 0;
    }
    u->host_alloc = (host_alloc_fn)clGetExtensionFunctionAddressForPlatform(platform, "clHostMemAllocINTEL");
    u->mem_free = (mem_free_fn)clGetExtensionFunctionAddressForPlatform(platform, "clMemFreeINTEL");
    u->memcpy = (memcpy_fn)clGetExtensionFunctionAddressForPlatform(platform, "clEnqueueMemcpyINTEL");
    u->fill = (fill_fn)clGetExtensionFunctionAddressForPlatform(platform, "clEnqueueMemFillINTEL");
    u->device_alloc = NULL;
    if (clGetDeviceInfo(device, CL_DEVICE_DEVICE_MEM_CAPABILITIES_INTEL, sizeof caps, &caps, NULL) == CL_SUCCESS &&
        (caps & CL_UNIFIED_SHARED_MEMORY_ACCESS_INTEL)) {
        u->device_alloc = (device_alloc_fn)clGetExtensionFunctionAddressForPlatform(platform, "clDeviceMemAllocINTEL");
    }
    return u->host_alloc && u->mem_free && u->memcpy && u->fill;
}

/* Aborts unless `n` bytes at `p` all hold the 4-byte `pattern`, repeated. */
static void expect_pattern(const unsigned char *p, size_t n, const unsigned char pattern[4], const char *what) {
    for (size_t i = 0; i < n; i += 4099) { /* a prime stride: every page, every position in the pattern */
        if (p[i] != pattern[i % 4]) {
            fprintf(stderr, "icd_bench: %s: byte %zu is %#x, expected %#x\n", what, i, p[i], pattern[i % 4]);
            exit(1);
        }
    }
    if (p[n - 1] != pattern[(n - 1) % 4]) {
        fprintf(stderr, "icd_bench: %s: the last byte is wrong\n", what);
        exit(1);
    }
}

static const unsigned char PATTERN[4] = {0x5b, 0x5a, 0x5a, 0x5a};

/* Blocking 64-byte copies, then 64 MiB copies and fills, between a and b
 * (either SVM or USM, the same calls otherwise); figures into f[copy64],
 * f[copy_big], f[fill_big]. */
static void copy_rows(cl_command_queue q, const struct usm *u, unsigned char *a, unsigned char *b, double *f,
                      int copy64, int copy_big, int fill_big) {
    const char *what = u ? "USM" : "SVM";
#define COPY(blocking, dst, src, n, ev)                                                               \
    (u ? u->memcpy(q, blocking, dst, src, n, 0, NULL, ev)                                             \
       : clEnqueueSVMMemcpy(q, blocking, dst, src, n, 0, NULL, ev))
    memset(a, 1, BIG);
    memset(b, 2, BIG);
    for (int i = 0; i < 1000; i++) { /* warm-up: the queue's worker threads start */
        CHECK(COPY(CL_TRUE, b, a, SMALL_COPY, NULL));
    }
    for (int r = 0; r < SMALL_RUNS; r++) {
        double t0 = now_s();
        for (int i = 0; i < COPY_ITERS; i++) {
            CHECK(COPY(CL_TRUE, b, a, SMALL_COPY, NULL));
        }
        f[copy64] = min_d(f[copy64], (now_s() - t0) / COPY_ITERS * 1e9);
    }
    if (b[0] != 1 || b[SMALL_COPY - 1] != 1 || b[SMALL_COPY] != 2) {
        fprintf(stderr, "icd_bench: the 64-byte %s copy did not copy exactly 64 bytes\n", what);
        exit(1);
    }
    for (int r = 0; r < BIG_RUNS; r++) {
        double t0 = now_s();
        CHECK(COPY(CL_TRUE, b, a, BIG, NULL));
        f[copy_big] = max_d(f[copy_big], (double)BIG / (now_s() - t0) / 1e9);
    }
    if (b[BIG / 2] != 1 || b[BIG - 1] != 1) {
        fprintf(stderr, "icd_bench: the 64 MiB %s copy did not copy\n", what);
        exit(1);
    }
#undef COPY
    for (int r = 0; r < BIG_RUNS; r++) {
        cl_event done;
        double t0 = now_s();
        if (u) {
            CHECK(u->fill(q, b, PATTERN, sizeof PATTERN, BIG, 0, NULL, &done));
        } else {
            CHECK(clEnqueueSVMMemFill(q, b, PATTERN, sizeof PATTERN, BIG, 0, NULL, &done));
        }
        CHECK(clWaitForEvents(1, &done));
        f[fill_big] = max_d(f[fill_big], (double)BIG / (now_s() - t0) / 1e9);
        CHECK(clReleaseEvent(done));
    }
    expect_pattern(b, BIG, PATTERN, u ? "the 64 MiB USM fill" : "the 64 MiB SVM fill");
}

/* One thread of a two-thread row: `body` ALLOC_ITERS times, timed from the moment every thread of the
 * run is running. The start is a spin on a shared counter, not a pthread barrier: a thread woken from a
 * barrier may take a few hundred microseconds to get a CPU again (a halted virtual CPU), which made the
 * one started late run alone for that long and read as a poor two-thread ratio. */
struct thread_loop {
    void (*body)(struct thread_loop *);
    const struct usm *u;
    cl_context ctx;
    cl_device_id device;
    atomic_int *arrived;
    int threads;
    double t0, t1; /* wall clock */
    double c0, c1; /* the thread's CPU time */
};

static void device_pair(struct thread_loop *d) {
    cl_int err;
    void *p = d->u->device_alloc(d->ctx, d->device, NULL, SMALL_ALLOC, 0, &err);
    CHECK(err);
    clobber(p);
    CHECK(d->u->mem_free(d->ctx, p));
}

static void libc_pair(struct thread_loop *d) {
    (void)d;
    volatile char *p = malloc(64);
    if (p == NULL) {
        fprintf(stderr, "icd_bench: malloc failed\n");
        exit(1);
    }
    p[0] = 1;
    free((void *)p);
}

static double thread_cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *thread_loop(void *arg) {
    struct thread_loop *d = arg;
    atomic_fetch_add(d->arrived, 1);
    while (atomic_load(d->arrived) < d->threads) {
    }
    d->t0 = now_s();
    d->c0 = thread_cpu_s();
    for (int i = 0; i < ALLOC_ITERS; i++) {
        d->body(d);
    }
    d->c1 = thread_cpu_s();
    d->t1 = now_s();
    return NULL;
}

/* ns per `body` on `threads` threads (1 or 2) at once: from the first thread's start to the last one's
 * end, over all of them. `*own_core` is set when every thread ran (had a CPU) for at least 95 % of that
 * span, by its own CPU time: on a shared machine the other case is common, and then a two-thread figure
 * measures the load, not the code (two threads that take turns on one core show no scaling at all). */
static double thread_run(void (*body)(struct thread_loop *), const struct usm *u, cl_context ctx,
                         cl_device_id device, int threads, int *own_core) {
    atomic_int arrived = 0;
    struct thread_loop d[2];
    pthread_t t[2];
    for (int i = 0; i < threads; i++) {
        d[i] = (struct thread_loop){body, u, ctx, device, &arrived, threads, 0, 0, 0, 0};
        if (pthread_create(&t[i], NULL, thread_loop, &d[i]) != 0) {
            fprintf(stderr, "icd_bench: pthread_create failed\n");
            exit(1);
        }
    }
    double first = 1e300, last = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        first = min_d(first, d[i].t0);
        last = max_d(last, d[i].t1);
    }
    *own_core = 1;
    for (int i = 0; i < threads; i++) {
        if (d[i].c1 - d[i].c0 < 0.95 * (last - first)) {
            *own_core = 0;
        }
    }
    return (last - first) / ((double)ALLOC_ITERS * threads) * 1e9;
}

/* Two threads against one, TWO_ROUNDS times (each round: one thread, then two): the best of each, and
 * over the rounds in which every thread had a core of its own in both runs ("both cores"), the
 * two-thread throughput over the one-thread throughput of the same round. Printed as
 * `both_cores NAME ROUNDS BOTH MIN MEDIAN MAX` (ratios; 0 when no round had both cores). */
#define TWO_ROUNDS 31

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void scaling_rounds(const char *name, void (*body)(struct thread_loop *), const struct usm *u, cl_context ctx,
                    cl_device_id device, double *one_best, double *two_best) {
    double ratios[TWO_ROUNDS];
    int both = 0;
    for (int r = -1; r < TWO_ROUNDS; r++) { /* round -1: warm-up */
        int own1, own2;
        double one = thread_run(body, u, ctx, device, 1, &own1);
        double two = thread_run(body, u, ctx, device, 2, &own2);
        if (r < 0) {
            continue;
        }
        *one_best = min_d(*one_best, one);
        *two_best = min_d(*two_best, two);
        if (own1 && own2) {
            ratios[both++] = one / two;
        }
    }
    qsort(ratios, both, sizeof ratios[0], cmp_d);
    printf("both_cores %s %d %d %.3f %.3f %.3f\n", name, TWO_ROUNDS, both, both ? ratios[0] : 0.0,
           both ? ratios[both / 2] : 0.0, both ? ratios[both - 1] : 0.0);
}

/* Best and worst of the timed runs of each figure (the worst: ns rows only). */
static double worst[NFIG];

static void record(double *f, int fig, double ns) {
    f[fig] = min_d(f[fig], ns);
    worst[fig] = max_d(worst[fig], ns);
}

/* The same for a GB/s row, whose best is the largest. */
static void record_gbps(double *f, int fig, double gbps) {
    f[fig] = max_d(f[fig], gbps);
    worst[fig] = worst[fig] > 0 ? min_d(worst[fig], gbps) : gbps;
}

/* OpenCL C kernels built from source: an empty kernel's launch + clFinish
 * round trip, and a copy kernel (uint4 per work-item) over the 64 MiB SVM
 * allocations a -> b. 0 when the device has no compiler (not printed). */
static const char KERNELS[] = "kernel void empty(void) {}\n"
                              "kernel void copy(global uint4 *d, global const uint4 *s) {\n"
                              "    size_t i = get_global_id(0); d[i] = s[i];\n"
                              "}\n"
                              "kernel void saxpy(global float4 *y, global const float4 *x, float a) {\n"
                              "    size_t i = get_global_id(0); y[i] = a * x[i] + y[i];\n"
                              "}\n";
static int kernel_rows(cl_context ctx, cl_device_id device, cl_command_queue q, unsigned char *a, unsigned char *b,
                       double *f) {
    cl_int err;
    const char *src = KERNELS;
    cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    CHECK(err);
    err = clBuildProgram(p, 1, &device, NULL, NULL, NULL);
    if (err != CL_SUCCESS) {
        printf("# kernels from source: clBuildProgram answers %d\n", err);
        clReleaseProgram(p);
        return 0;
    }
    cl_kernel empty = clCreateKernel(p, "empty", &err);
    CHECK(err);
    cl_kernel copy = clCreateKernel(p, "copy", &err);
    CHECK(err);
    size_t one = 1, items = BIG / 16;
    for (int i = 0; i < 100; i++) { /* warm-up */
        CHECK(clEnqueueNDRangeKernel(q, empty, 1, NULL, &one, NULL, 0, NULL, NULL));
        CHECK(clFinish(q));
    }
    for (int r = 0; r < SMALL_RUNS; r++) {
        double t0 = now_s();
        for (int i = 0; i < KERNEL_ITERS; i++) {
            CHECK(clEnqueueNDRangeKernel(q, empty, 1, NULL, &one, NULL, 0, NULL, NULL));
            CHECK(clFinish(q));
        }
        record(f, KERNEL_EMPTY, (now_s() - t0) / KERNEL_ITERS * 1e9);
    }
    memset(a, 3, BIG);
    CHECK(clSetKernelArgSVMPointer(copy, 0, b));
    CHECK(clSetKernelArgSVMPointer(copy, 1, a));
    for (int r = -1; r < BIG_RUNS; r++) { /* run -1: the untimed warm-up (PoCL's first launch) */
        double t0 = now_s();
        CHECK(clEnqueueNDRangeKernel(q, copy, 1, NULL, &items, NULL, 0, NULL, NULL));
        CHECK(clFinish(q));
        if (r >= 0) record_gbps(f, KERNEL_COPY_BIG, (double)BIG / (now_s() - t0) / 1e9);
    }
    if (b[0] != 3 || b[BIG - 1] != 3) {
        fprintf(stderr, "icd_bench: the copy kernel did not copy\n");
        exit(1);
    }
    /* saxpy: y = 0.5 x + y with x = 2 and y = 1, so y grows by 1 each run. */
    cl_kernel saxpy = clCreateKernel(p, "saxpy", &err);
    CHECK(err);
    float *x = (float *)a, *y = (float *)b, half = 0.5f;
    for (size_t i = 0; i < BIG / sizeof(float); i++) {
        x[i] = 2.0f;
        y[i] = 1.0f;
    }
    CHECK(clSetKernelArgSVMPointer(saxpy, 0, y));
    CHECK(clSetKernelArgSVMPointer(saxpy, 1, x));
    CHECK(clSetKernelArg(saxpy, 2, sizeof half, &half));
    for (int r = -1; r < BIG_RUNS; r++) {
        double t0 = now_s();
        CHECK(clEnqueueNDRangeKernel(q, saxpy, 1, NULL, &items, NULL, 0, NULL, NULL));
        CHECK(clFinish(q));
        if (r >= 0) record_gbps(f, KERNEL_SAXPY_BIG, (double)BIG / (now_s() - t0) / 1e9);
    }
    float want = 1.0f + (float)(BIG_RUNS + 1);
    if (y[0] != want || y[BIG / sizeof(float) - 1] != want) {
        fprintf(stderr, "icd_bench: saxpy gave %g, not %g\n", (double)y[0], (double)want);
        exit(1);
    }
    clReleaseKernel(saxpy);
    clReleaseKernel(empty);
    clReleaseKernel(copy);
    clReleaseProgram(p);
    return 1;
}

/* examples/cl/yuyv_to_rgba.cl (bench/icd/run runs from the checkout's root) on a 1080p YUYV frame in SVM
 * memory, and on dmabridge the built-in yuyv_to_rgba_strided on the same frame, their bytes compared. */
#define YW 1920
#define YH 1080
static void yuyv_rows(cl_context ctx, cl_device_id device, cl_command_queue q, double *f) {
    static char text[8192];
    FILE *file = fopen("examples/cl/yuyv_to_rgba.cl", "r");
    size_t len = file ? fread(text, 1, sizeof text - 1, file) : 0;
    if (file) fclose(file);
    if (len == 0) {
        printf("# yuyv: examples/cl/yuyv_to_rgba.cl not found (run from the checkout's root)\n");
        return;
    }
    cl_int err;
    const char *src = text;
    cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(p, 1, &device, NULL, NULL, NULL));
    cl_kernel k[2] = {clCreateKernel(p, "yuyv_to_rgba", &err), NULL};
    CHECK(err);
    cl_program bp = clCreateProgramWithBuiltInKernels(ctx, 1, &device, "yuyv_to_rgba_strided", &err);
    if (bp) k[1] = clCreateKernel(bp, "yuyv_to_rgba_strided", &err);
    size_t in_size = (size_t)YW * YH * 2, out_size = (size_t)YW * YH * 4;
    unsigned char *in = clSVMAlloc(ctx, CL_MEM_READ_WRITE, in_size, 0);
    unsigned char *out[2] = {clSVMAlloc(ctx, CL_MEM_READ_WRITE, out_size, 0),
                             clSVMAlloc(ctx, CL_MEM_READ_WRITE, out_size, 0)};
    if (!in || !out[0] || !out[1]) {
        fprintf(stderr, "icd_bench: clSVMAlloc of a 1080p frame returned NULL\n");
        exit(1);
    }
    for (size_t i = 0; i < in_size; i++) in[i] = (unsigned char)(i * 7 + i / 4093);
    memset(out[0], 0, out_size);
    memset(out[1], 1, out_size);
    cl_uint dims[4] = {YW, YH, YW * 2, YW * 4};
    size_t pairs[2] = {YW / 2, YH}, rows = YH;
    static const int fig[2] = {YUYV_CL, YUYV_BUILTIN};
    for (int i = 0; i < 2 && k[i]; i++) {
        CHECK(clSetKernelArgSVMPointer(k[i], 0, in));
        CHECK(clSetKernelArgSVMPointer(k[i], 1, out[i]));
        for (cl_uint a = 0; a < 4; a++) CHECK(clSetKernelArg(k[i], 2 + a, sizeof dims[a], &dims[a]));
        for (int r = -1; r < YUYV_RUNS; r++) { /* run -1: the untimed warm-up */
            double t0 = now_s();
            CHECK(clEnqueueNDRangeKernel(q, k[i], i ? 1 : 2, NULL, i ? &rows : pairs, NULL, 0, NULL, NULL));
            CHECK(clFinish(q));
            if (r >= 0) record(f, fig[i], (now_s() - t0) * 1e9);
        }
    }
    if (k[1] && memcmp(out[0], out[1], out_size) != 0) {
        fprintf(stderr, "icd_bench: yuyv_to_rgba.cl and the built-in gave different bytes\n");
        exit(1);
    }
    for (int i = 0; i < 2; i++) {
        if (k[i]) clReleaseKernel(k[i]);
        clSVMFree(ctx, out[i]);
    }
    clSVMFree(ctx, in);
    if (bp) clReleaseProgram(bp);
    clReleaseProgram(p);
}

/* Prints the figures `f` holds: the kernel rows (kernels) or all the others; a figure the device lacks
 * (USM, USM device memory, a kernel row that was not measured) is left out. */
static int is_kernel_figure(int i) {
    return i == KERNEL_EMPTY || i == KERNEL_COPY_BIG || i == KERNEL_SAXPY_BIG || i == YUYV_CL || i == YUYV_BUILTIN;
}
static void print_figures(const double *f, int kernels, int has_usm, int has_device_usm) {
    for (int i = 0; i < NFIG; i++) {
        int usm_row = i == USM_ALLOC || i == USM_COPY64 || i == USM_COPY_BIG || i == USM_FILL_BIG;
        int dev_row = i == USM_DEV_ALLOC || i == USM_DEV_ALLOC_2T;
        if (is_kernel_figure(i) != kernels || (kernels && (f[i] <= 0 || f[i] >= 1e300))) continue;
        if ((!usm_row && !dev_row) || (usm_row && has_usm) || (dev_row && has_usm && has_device_usm)) {
            printf(strstr(fig_name[i], "gbps") ? "%s %.3f\n" : "%s %.1f\n", fig_name[i], f[i]);
            if (worst[i] > 0) {
                printf("spread %s %.1f %.1f\n", fig_name[i], f[i], worst[i]);
            }
        }
    }
}

/* Measures one device and prints its figures (a figure the device lacks is not printed); with
 * kernels_only, only the kernel rows (--kernel-rounds). */
static int kernels_only;
static int measure(const char *want) {
    cl_platform_id platform;
    cl_device_id device;
    cl_int err;
    double f[NFIG];
    for (int i = 0; i < NFIG; i++) {
        f[i] = (i == SVM_COPY_BIG || i == USM_COPY_BIG || i == LIBC_COPY_BIG || i == SVM_FILL_BIG ||
                i == USM_FILL_BIG || i == LIBC_FILL_BIG || i == KERNEL_COPY_BIG || i == KERNEL_SAXPY_BIG)
                   ? 0.0      /* GB/s: the best is the largest */
                   : 1e300;   /* ns: the best is the smallest */
    }
    pick_device(want, &platform, &device);
    print_info("platform", platform, NULL, CL_PLATFORM_NAME);
    print_info("platform version", platform, NULL, CL_PLATFORM_VERSION);
    print_info("device", NULL, device, CL_DEVICE_NAME);
    struct usm usm = {0};
    int has_usm = find_usm(platform, device, &usm);
    printf("# usm: %s\n", has_usm ? "yes" : "no");
    fflush(stdout);

    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, device, NULL, &err);
    CHECK(err);

    /* 4 KiB allocation + free: SVM, USM, libc, interleaved run by run so that a
     * disturbance hits them alike; run -1 is the untimed warm-up. */
    for (int r = -1; r < SMALL_RUNS && !kernels_only; r++) {
        double *f_or_none = r < 0 ? NULL : f;
        double t0 = now_s();
        for (int i = 0; i < ALLOC_ITERS; i++) {
            volatile char *p = clSVMAlloc(ctx, CL_MEM_READ_WRITE, SMALL_ALLOC, 0);
            if (p == NULL) {
                fprintf(stderr, "icd_bench: clSVMAlloc of %d bytes returned NULL\n", SMALL_ALLOC);
                return 1;
            }
            p[0] = 1;
            clSVMFree(ctx, (void *)p);
        }
        if (f_or_none) record(f, SVM_ALLOC, (now_s() - t0) / ALLOC_ITERS * 1e9);
        if (has_usm) {
            t0 = now_s();
            for (int i = 0; i < ALLOC_ITERS; i++) {
                volatile char *p = usm.host_alloc(ctx, NULL, SMALL_ALLOC, 0, &err);
                CHECK(err);
                p[0] = 1;
                CHECK(usm.mem_free(ctx, (void *)p));
            }
            if (f_or_none) record(f, USM_ALLOC, (now_s() - t0) / ALLOC_ITERS * 1e9);
        }
        t0 = now_s();
        for (int i = 0; i < ALLOC_ITERS; i++) {
            volatile char *p = aligned_alloc(128, SMALL_ALLOC);
            if (p == NULL) {
                fprintf(stderr, "icd_bench: aligned_alloc failed\n");
                return 1;
            }
            p[0] = 1;
            free((void *)p);
        }
        if (f_or_none) record(f, LIBC_ALLOC, (now_s() - t0) / ALLOC_ITERS * 1e9);
    }
    /* One thread, then two on the same context: the ICD's handle lookups
       must not serialise them; and the reference of the same run, what two
       threads that share nothing reach. */
    if (has_usm && usm.device_alloc && !kernels_only) {
        scaling_rounds("cl_usm_device_alloc_free_4k", device_pair, &usm, ctx, device, &f[USM_DEV_ALLOC],
                &f[USM_DEV_ALLOC_2T]);
    }
    if (!kernels_only) {
        scaling_rounds("libc_malloc_free_64", libc_pair, NULL, ctx, device, &f[LIBC_SMALL_ALLOC],
                       &f[LIBC_SMALL_ALLOC_2T]);
    }

    /* Two 64 MiB allocations of each kind, touched first (copy_rows) so that
     * no timed operation pays for first-touch page faults. */
    unsigned char *sa = clSVMAlloc(ctx, CL_MEM_READ_WRITE, BIG, 0);
    unsigned char *sb = clSVMAlloc(ctx, CL_MEM_READ_WRITE, BIG, 0);
    if (sa == NULL || sb == NULL) {
        fprintf(stderr, "icd_bench: clSVMAlloc of 64 MiB returned NULL\n");
        return 1;
    }
    if (kernels_only) {
        memset(sa, 1, BIG);
        memset(sb, 2, BIG);
        int has_kernels = kernel_rows(ctx, device, q, sa, sb, f);
        if (has_kernels) yuyv_rows(ctx, device, q, f);
        clSVMFree(ctx, sa);
        clSVMFree(ctx, sb);
        for (int i = KERNEL_EMPTY; i < NFIG && has_kernels; i++) {
            if (f[i] > 0 && f[i] < 1e300) printf("%s %.3f\nspread %s %.3f %.3f\n", fig_name[i], f[i], fig_name[i], f[i], worst[i]);
        }
        CHECK(clReleaseCommandQueue(q));
        CHECK(clReleaseContext(ctx));
        return 0;
    }
    copy_rows(q, NULL, sa, sb, f, SVM_COPY64, SVM_COPY_BIG, SVM_FILL_BIG);
    unsigned char *a, *b;
    if (has_usm) {
        a = usm.host_alloc(ctx, NULL, BIG, 0, &err);
        CHECK(err);
        b = usm.host_alloc(ctx, NULL, BIG, 0, &err);
        CHECK(err);
        copy_rows(q, &usm, a, b, f, USM_COPY64, USM_COPY_BIG, USM_FILL_BIG);
    } else {
        a = malloc(BIG);
        b = malloc(BIG);
        if (a == NULL || b == NULL) {
            fprintf(stderr, "icd_bench: malloc of 64 MiB failed\n");
            return 1;
        }
        memset(a, 1, BIG);
        memset(b, 2, BIG);
    }

    /* libc on the same memory (USM host memory if there is some). */
    for (int r = 0; r < BIG_RUNS; r++) {
        double t0 = now_s();
        memcpy(b, a, BIG);
        clobber(b);
        f[LIBC_COPY_BIG] = max_d(f[LIBC_COPY_BIG], (double)BIG / (now_s() - t0) / 1e9);
    }
    for (int r = 0; r < BIG_RUNS; r++) {
        double t0 = now_s();
        memset(b, 0x5a, BIG);
        clobber(b);
        f[LIBC_FILL_BIG] = max_d(f[LIBC_FILL_BIG], (double)BIG / (now_s() - t0) / 1e9);
    }
    if (has_usm) {
        CHECK(usm.mem_free(ctx, a));
        CHECK(usm.mem_free(ctx, b));
    } else {
        free(a);
        free(b);
    }
    print_figures(f, 0, has_usm, usm.device_alloc != NULL);
    /* The kernels from source last, their figures printed on their own: a
     * vendor's compiler that crashes the process (Intel's CPU runtime 2026.2
     * does on AMD EPYC, signal 11 in clBuildProgram) loses only these rows. */
    fflush(stdout);
    if (kernel_rows(ctx, device, q, sa, sb, f)) {
        yuyv_rows(ctx, device, q, f);
        print_figures(f, 1, has_usm, usm.device_alloc != NULL);
    }
    clSVMFree(ctx, sa);
    clSVMFree(ctx, sb);
    CHECK(clReleaseCommandQueue(q));
    CHECK(clReleaseContext(ctx));
    return 0;
}

/* ---- --table: one child per vendor, figures side by side ---- */

#define MAXCOL 8

struct column {
    const char *name;
    const char *vendor;
    char about[512]; /* the platform and device that ran, or why nothing did */
    double f[NFIG];  /* < 0: not measured */
    double worst[NFIG]; /* the worst timed run where the child printed its spread, else 0 */
    int ok;
    double both[2][5]; /* `both_cores` of the device row and the libc reference: rounds, both, min, median, max */
};

static const char *const both_name[2] = {"cl_usm_device_alloc_free_4k", "libc_malloc_free_64"};

/* Runs `measure` in a child with OCL_ICD_VENDORS=vendor; parses its output into `c`. */
static void run_child(struct column *c) {
    int out[2];
    for (int i = 0; i < NFIG; i++) {
        c->f[i] = -1;
    }
    memset(c->worst, 0, sizeof c->worst);
    memset(c->both, 0, sizeof c->both);
    if (pipe(out) != 0) {
        snprintf(c->about, sizeof c->about, "pipe: %s", strerror(errno));
        return;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(c->about, sizeof c->about, "fork: %s", strerror(errno));
        return;
    }
    if (pid == 0) {
        close(out[0]);
        dup2(out[1], 1);
        close(out[1]);
        setenv("OCL_ICD_VENDORS", c->vendor, 1);
        alarm(CHILD_TIMEOUT);
        exit(measure(NULL));
    }
    close(out[1]);
    FILE *in = fdopen(out[0], "r");
    char line[1024];
    char about[512] = "";
    while (in && fgets(line, sizeof line, in)) {
        line[strcspn(line, "\n")] = 0;
        if (strncmp(line, "# ", 2) == 0) {
            if (strncmp(line, "# platform: ", 12) == 0 || strncmp(line, "# device: ", 10) == 0) {
                size_t n = strlen(about);
                snprintf(about + n, sizeof about - n, "%s%s", n ? ", " : "", strchr(line, ':') + 2);
            }
            continue;
        }
        for (int i = 0; i < NFIG; i++) {
            size_t n = strlen(fig_name[i]);
            if (strncmp(line, fig_name[i], n) == 0 && line[n] == ' ') {
                c->f[i] = strtod(line + n + 1, NULL);
            }
        }
        char name[64];
        double b[5];
        if (sscanf(line, "spread %63s %lf %lf", name, &b[0], &b[1]) == 3) {
            for (int i = 0; i < NFIG; i++) {
                if (strcmp(name, fig_name[i]) == 0) {
                    c->worst[i] = b[1];
                }
            }
        }
        if (sscanf(line, "both_cores %63s %lf %lf %lf %lf %lf", name, &b[0], &b[1], &b[2], &b[3], &b[4]) == 6) {
            for (int i = 0; i < 2; i++) {
                if (strcmp(name, both_name[i]) == 0) {
                    memcpy(c->both[i], b, sizeof b);
                }
            }
        }
    }
    if (in) {
        fclose(in);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    c->ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (c->ok) {
        snprintf(c->about, sizeof c->about, "%s", about);
    } else if (WIFSIGNALED(status)) {
        int got = 0;
        for (int i = 0; i < NFIG; i++) got += c->f[i] >= 0;
        snprintf(c->about, sizeof c->about, "failed: killed by signal %d%s%s (%s)", WTERMSIG(status),
                 WTERMSIG(status) == SIGALRM ? ", timed out" : "",
                 got ? " after its other figures, in the kernel rows" : "", about[0] ? about : "no platform reported");
    } else {
        snprintf(c->about, sizeof c->about, "failed: exit status %d (%s; see its stderr above)",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1, about[0] ? about : "no platform reported");
    }
}

static void cell(char *buf, size_t n, double v, double libc, int ns) {
    if (v < 0) {
        snprintf(buf, n, "-");
    } else if (ns) {
        double r = v / libc;
        if (v >= 1000) {
            snprintf(buf, n, "%.2f us (%.1fx)", v / 1000, r);
        } else {
            snprintf(buf, n, "%.0f ns (%.1fx)", v, r);
        }
    } else {
        snprintf(buf, n, "%.1f GB/s (%.2fx)", v, v / libc);
    }
}

/* A NAME=VENDOR argument into an empty column; 0, or -1 with why printed. */
static int parse_column(char *arg, struct column *c) {
    char *eq = strchr(arg, '=');
    if (eq == NULL) {
        fprintf(stderr, "icd_bench: columns are NAME=VENDOR arguments, not %s\n", arg);
        return -1;
    }
    *eq = 0;
    memset(c, 0, sizeof *c);
    c->name = arg;
    c->vendor = eq + 1;
    return 0;
}

static int table(int argc, char **argv) {
    struct column cols[MAXCOL];
    int n = 0;
    for (int i = 0; i < argc && n < MAXCOL; i++, n++) {
        if (parse_column(argv[i], &cols[n]) != 0) return 2;
    }
    for (int i = 0; i < n; i++) {
        fprintf(stderr, "icd_bench: measuring %s (OCL_ICD_VENDORS=%s)\n", cols[i].name, cols[i].vendor);
        run_child(&cols[i]);
    }
    printf("\n");
    for (int i = 0; i < n; i++) {
        printf("%-10s %s\n", cols[i].name, cols[i].about);
    }
    /* Rows: the OpenCL figure, with its ratio to libc's from the same child
     * (the ratio's libc figure is the same row's libc one). */
    static const struct {
        const char *what;
        int fig, libc, ns;
    } rows[] = {
        {"4 KiB clSVMAlloc+clSVMFree (x libc)", SVM_ALLOC, LIBC_ALLOC, 1},
        {"4 KiB USM host alloc+free (x libc)", USM_ALLOC, LIBC_ALLOC, 1},
        {"libc aligned_alloc+free 4 KiB", LIBC_ALLOC, LIBC_ALLOC, 1},
        {"4 KiB USM device alloc+free, 1 thread", USM_DEV_ALLOC, -1, 1},
        {"the same, 2 threads (wall time per pair)", USM_DEV_ALLOC_2T, -1, 1},
        {"blocking 64 B SVM memcpy, round trip", SVM_COPY64, -1, 1},
        {"blocking 64 B USM memcpy, round trip", USM_COPY64, -1, 1},
        {"64 MiB SVM memcpy (x memcpy)", SVM_COPY_BIG, LIBC_COPY_BIG, 0},
        {"64 MiB USM memcpy (x memcpy)", USM_COPY_BIG, LIBC_COPY_BIG, 0},
        {"libc memcpy 64 MiB", LIBC_COPY_BIG, LIBC_COPY_BIG, 0},
        {"64 MiB SVM fill, 4 B pattern (x memset)", SVM_FILL_BIG, LIBC_FILL_BIG, 0},
        {"64 MiB USM fill, 4 B pattern (x memset)", USM_FILL_BIG, LIBC_FILL_BIG, 0},
        {"libc memset 64 MiB", LIBC_FILL_BIG, LIBC_FILL_BIG, 0},
        {"empty kernel (OpenCL C), launch+finish", KERNEL_EMPTY, -1, 1},
        {"64 MiB copy kernel (OpenCL C) (x memcpy)", KERNEL_COPY_BIG, LIBC_COPY_BIG, 0},
        {"64 MiB saxpy kernel (OpenCL C) (x memcpy)", KERNEL_SAXPY_BIG, LIBC_COPY_BIG, 0},
        {"1080p YUYV->RGBA, OpenCL C", YUYV_CL, -1, 1},
        {"1080p YUYV->RGBA, built-in kernel", YUYV_BUILTIN, -1, 1},
    };
    printf("\n%-40s", "");
    for (int i = 0; i < n; i++) {
        printf(" %22s", cols[i].name);
    }
    printf("\n");
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        printf("%-40s", rows[r].what);
        for (int i = 0; i < n; i++) {
            char buf[64];
            double v = cols[i].f[rows[r].fig];
            if (rows[r].libc < 0) {
                if (v < 0) {
                    snprintf(buf, sizeof buf, "-");
                } else if (v >= 1e6) {
                    snprintf(buf, sizeof buf, "%.2f ms", v / 1e6);
                } else if (v >= 1000) {
                    snprintf(buf, sizeof buf, "%.2f us", v / 1000);
                } else {
                    snprintf(buf, sizeof buf, "%.0f ns", v);
                }
            } else if (rows[r].fig == rows[r].libc) {
                if (v < 0) {
                    snprintf(buf, sizeof buf, "-");
                } else {
                    snprintf(buf, sizeof buf, rows[r].ns ? "%.0f ns" : "%.1f GB/s", v);
                }
            } else {
                cell(buf, sizeof buf, v, cols[i].f[rows[r].libc], rows[r].ns);
            }
            printf(" %22s", buf);
        }
        printf("\n");
    }
    /* Two threads' throughput over one thread's: device USM alloc+free, and
     * the reference of the same child (threads that share nothing). */
    static const struct {
        const char *what;
        int one, two;
    } scaling[] = {
        {"device USM: 2 threads / 1 thread", USM_DEV_ALLOC, USM_DEV_ALLOC_2T},
        {"reference, libc malloc(64): 2 thr / 1", LIBC_SMALL_ALLOC, LIBC_SMALL_ALLOC_2T},
    };
    for (size_t r = 0; r < sizeof scaling / sizeof scaling[0]; r++) {
        printf("%-40s", scaling[r].what);
        for (int i = 0; i < n; i++) {
            char buf[64];
            double one = cols[i].f[scaling[r].one], two = cols[i].f[scaling[r].two];
            if (one < 0 || two <= 0) {
                snprintf(buf, sizeof buf, "-");
            } else {
                snprintf(buf, sizeof buf, "%.2fx", one / two);
            }
            printf(" %22s", buf);
        }
        printf("\n");
    }
    /* The same ratios over the rounds in which every thread had a core of its own: the median, and how
       many of the rounds had both cores. */
    static const char *const both_what[2] = {"device USM 2/1, rounds with both cores", "libc 2/1, rounds with both cores"};
    for (int r = 0; r < 2; r++) {
        printf("%-40s", both_what[r]);
        for (int i = 0; i < n; i++) {
            char buf[64];
            const double *b = cols[i].both[r];
            if (b[0] <= 0) {
                snprintf(buf, sizeof buf, "-");
            } else if (b[1] <= 0) {
                snprintf(buf, sizeof buf, "none of %.0f", b[0]);
            } else {
                snprintf(buf, sizeof buf, "%.2fx (%.0f of %.0f)", b[3], b[1], b[0]);
            }
            printf(" %22s", buf);
        }
        printf("\n");
    }
    /* The kernel rows' spread: best and worst of their timed runs (BIG_RUNS, YUYV_RUNS, SMALL_RUNS). */
    static const int spread_rows[] = {KERNEL_EMPTY, KERNEL_COPY_BIG, KERNEL_SAXPY_BIG, YUYV_CL, YUYV_BUILTIN};
    printf("\nkernel rows, best .. worst of the timed runs:\n");
    for (size_t r = 0; r < sizeof spread_rows / sizeof spread_rows[0]; r++) {
        int fig = spread_rows[r];
        printf("  %-38s", fig_name[fig]);
        for (int i = 0; i < n; i++) {
            char buf[64];
            if (cols[i].f[fig] < 0 || cols[i].worst[fig] <= 0) {
                snprintf(buf, sizeof buf, "-");
            } else if (strstr(fig_name[fig], "gbps")) {
                snprintf(buf, sizeof buf, "%.1f .. %.1f GB/s", cols[i].f[fig], cols[i].worst[fig]);
            } else if (cols[i].f[fig] >= 1e6) {
                snprintf(buf, sizeof buf, "%.2f .. %.2f ms", cols[i].f[fig] / 1e6, cols[i].worst[fig] / 1e6);
            } else if (cols[i].f[fig] >= 1000) {
                snprintf(buf, sizeof buf, "%.2f .. %.2f us", cols[i].f[fig] / 1000, cols[i].worst[fig] / 1000);
            } else {
                snprintf(buf, sizeof buf, "%.0f .. %.0f ns", cols[i].f[fig], cols[i].worst[fig]);
            }
            printf(" %22s", buf);
        }
        printf("\n");
    }
    /* Each column's OpenCL C conversion against its own built-in, same run. */
    for (int i = 0; i < n; i++) {
        if (cols[i].f[YUYV_CL] > 0 && cols[i].f[YUYV_BUILTIN] > 0) {
            printf("%s: 1080p YUYV->RGBA, OpenCL C %.2f ms, built-in %.2f ms: the built-in is %.2fx as fast\n",
                   cols[i].name, cols[i].f[YUYV_CL] / 1e6, cols[i].f[YUYV_BUILTIN] / 1e6,
                   cols[i].f[YUYV_CL] / cols[i].f[YUYV_BUILTIN]);
        }
    }
    /* The first column against each other one, row by row. */
    if (n > 1 && cols[0].ok) {
        printf("\n%s against the others (>1: %s ahead):\n", cols[0].name, cols[0].name);
        for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
            if (rows[r].fig == rows[r].libc || cols[0].f[rows[r].fig] < 0) {
                continue;
            }
            printf("  %-40s", rows[r].what);
            for (int i = 1; i < n; i++) {
                double us = cols[0].f[rows[r].fig], them = cols[i].f[rows[r].fig];
                if (them < 0) {
                    printf("  vs %s: -", cols[i].name);
                } else {
                    printf("  vs %s: %.2fx", cols[i].name, rows[r].ns ? them / us : us / them);
                }
            }
            printf("\n");
        }
    }
    int failed = 0;
    for (int i = 0; i < n; i++) {
        failed |= !cols[i].ok;
    }
    return failed && !cols[0].ok ? 1 : 0;
}

/* --kernel-rounds N NAME=VENDOR NAME=VENDOR: the kernel rows only, the two columns in turn N times (each
 * round a child per column, the first column first), so that both see the machine alike; per round each
 * figure of both and the first's over the second's, then the median ratio and its range over the rounds. */
static int kernel_rounds(int rounds, char *a, char *b) {
    char *arg[2] = {a, b};
    struct column cols[2];
    for (int i = 0; i < 2; i++) {
        if (parse_column(arg[i], &cols[i]) != 0) return 2;
    }
    static const int figs[] = {KERNEL_EMPTY, KERNEL_COPY_BIG, KERNEL_SAXPY_BIG, YUYV_CL};
    enum { NF = sizeof figs / sizeof figs[0], MAXR = 64 };
    double ratio[NF][MAXR];
    int nr[NF] = {0};
    kernels_only = 1;
    rounds = rounds < 1 ? 1 : rounds > MAXR ? MAXR : rounds;
    printf("== kernels from source, %s and %s in turn, %d rounds (GB/s: best of %d runs; ns: best of %d x %d "
           "launches; yuyv: best of %d; ratio >1: %s ahead)\n",
           cols[0].name, cols[1].name, rounds, BIG_RUNS, SMALL_RUNS, KERNEL_ITERS, YUYV_RUNS, cols[0].name);
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < 2; i++) {
            run_child(&cols[i]);
            if (!cols[i].ok) {
                printf("round %d: %s %s\n", r + 1, cols[i].name, cols[i].about);
                return 1;
            }
        }
        printf("round %2d:", r + 1);
        for (int k = 0; k < NF; k++) {
            double us = cols[0].f[figs[k]], them = cols[1].f[figs[k]];
            if (us <= 0 || them <= 0) continue;
            int ns = !strstr(fig_name[figs[k]], "gbps");
            double x = ns ? them / us : us / them;
            ratio[k][nr[k]++] = x;
            printf("  %s %.4g / %.4g = %.2fx", fig_name[figs[k]], us, them, x);
        }
        if (cols[0].f[YUYV_BUILTIN] > 0) printf("  cl_yuyv_builtin_1080p_ns %.4g", cols[0].f[YUYV_BUILTIN]);
        printf("\n");
        fflush(stdout);
    }
    printf("%s over %s, median (min .. max) of %d rounds:\n", cols[0].name, cols[1].name, rounds);
    for (int k = 0; k < NF; k++) {
        if (nr[k] == 0) continue;
        qsort(ratio[k], (size_t)nr[k], sizeof ratio[k][0], cmp_d);
        printf("  %-32s %.2fx (%.2f .. %.2f)\n", fig_name[figs[k]], ratio[k][nr[k] / 2], ratio[k][0],
               ratio[k][nr[k] - 1]);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 5 && strcmp(argv[1], "--kernel-rounds") == 0) {
        return kernel_rounds(atoi(argv[2]), argv[3], argv[4]);
    }
    if (argc >= 2 && strcmp(argv[1], "--table") == 0) {
        return table(argc - 2, argv + 2);
    }
    if (argc == 3 && strcmp(argv[1], "--platform") == 0) {
        return measure(argv[2]);
    }
    if (argc != 1) {
        fprintf(stderr, "usage: icd_bench [--platform SUBSTRING] | --table NAME=VENDOR... | --kernel-rounds N "
                        "NAME=VENDOR NAME=VENDOR\n");
        return 2;
    }
    return measure(NULL);
}
