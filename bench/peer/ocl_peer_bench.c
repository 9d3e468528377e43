/*
 * ocl_peer_bench: the peer side of dmabridge's memory benchmark
 * (driver/dmabridge/benches/memory.rs builds and runs this program and prints
 * its figures beside dmabridge's from the same run).
 *
 * It measures, through the OpenCL ICD loader, on the first OpenCL device that
 * has coarse-grain SVM (PoCL's CPU device once `bench/peer-deps` installed it),
 * the operations dmabridge's USM path is compared with, and libc's
 * equivalents on the same machine at the same time:
 *
 *   cl_svm_alloc_free_4k_ns       clSVMAlloc(4 KiB) + clSVMFree, one store between
 *   libc_alloc_free_4k_ns         aligned_alloc(128, 4 KiB) + one store + free
 *   cl_svm_memcpy_64b_ns          blocking clEnqueueSVMMemcpy of 64 bytes, enqueue -> complete
 *   cl_svm_memcpy_64mib_gbps      blocking clEnqueueSVMMemcpy of 64 MiB
 *   libc_memcpy_64mib_gbps        memcpy of 64 MiB
 *   cl_svm_fill_64mib_gbps        clEnqueueSVMMemFill of 64 MiB with a 4-byte pattern, waited for
 *   libc_memset_64mib_gbps        memset of 64 MiB
 *
 * Output: one `name value` line per figure (ns, or GB/s with GB = 1e9 bytes),
 * preceded by `# ...` lines that say which platform and device ran. Each figure
 * is the best of several timed runs, as on dmabridge's side: the machines are
 * shared, and the least disturbed run is the one to compare. Every OpenCL
 * result is checked; a failure prints the call that failed and its error code
 * on stderr and exits with status 1. The copied and filled bytes are checked
 * too, so a figure is never that of an operation that did nothing.
 *
 * Build: cc -O2 -o ocl_peer_bench ocl_peer_bench.c -lOpenCL
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BIG ((size_t)64 << 20) /* the bandwidth rows: 64 MiB */
#define SMALL_ALLOC 4096       /* the allocation row: 4 KiB */
#define SMALL_COPY 64          /* the round-trip row: 64 bytes */
#define ALLOC_ITERS 20000      /* pairs per timed run */
#define COPY_ITERS 20000       /* copies per timed run */
#define SMALL_RUNS 5           /* timed runs of the small rows */
#define BIG_RUNS 10            /* timed runs of the 64 MiB rows (one operation each) */

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double min_d(double a, double b) { return a < b ? a : b; }

/* Keeps the compiler from dropping stores it cannot see being read. */
static void clobber(void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }

static void fail(const char *what, cl_int err) {
    fprintf(stderr, "ocl_peer_bench: %s failed: OpenCL error %d\n", what, (int)err);
    exit(1);
}

#define CHECK(call)                        \
    do {                                   \
        cl_int err_ = (call);              \
        if (err_ != CL_SUCCESS) {          \
            fail(#call, err_);             \
        }                                  \
    } while (0)

/* A device with coarse-grain SVM: the first one found on any platform. */
static void pick_device(cl_platform_id *platform, cl_device_id *device) {
    cl_uint np = 0;
    cl_platform_id platforms[16];
    CHECK(clGetPlatformIDs(16, platforms, &np));
    if (np > 16) {
        np = 16;
    }
    for (cl_uint i = 0; i < np; i++) {
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
    fprintf(stderr, "ocl_peer_bench: clGetDeviceIDs: no OpenCL device with coarse-grain SVM on %u platform(s)\n",
            (unsigned)np);
    exit(1);
}

static void print_name(const char *label, cl_int (*get)(void *, cl_uint, size_t, void *, size_t *), void *obj,
                       cl_uint param) {
    char name[256] = "?";
    if (get(obj, param, sizeof name - 1, name, NULL) != CL_SUCCESS) {
        strcpy(name, "?");
    }
    printf("# %s: %s\n", label, name);
}

static cl_int platform_info(void *p, cl_uint param, size_t n, void *v, size_t *r) {
    return clGetPlatformInfo((cl_platform_id)p, param, n, v, r);
}

static cl_int device_info(void *d, cl_uint param, size_t n, void *v, size_t *r) {
    return clGetDeviceInfo((cl_device_id)d, param, n, v, r);
}

/* Aborts unless `n` bytes at `p` all hold the 4-byte `pattern`, repeated. */
static void expect_pattern(const unsigned char *p, size_t n, const unsigned char pattern[4], const char *what) {
    for (size_t i = 0; i < n; i += 4099) { /* a prime stride: every page, every position in the pattern */
        if (p[i] != pattern[i % 4]) {
            fprintf(stderr, "ocl_peer_bench: %s: byte %zu is %#x, expected %#x\n", what, i, p[i], pattern[i % 4]);
            exit(1);
        }
    }
    if (p[n - 1] != pattern[(n - 1) % 4]) {
        fprintf(stderr, "ocl_peer_bench: %s: the last byte is wrong\n", what);
        exit(1);
    }
}

int main(void) {
    cl_platform_id platform;
    cl_device_id device;
    cl_int err;
    pick_device(&platform, &device);
    print_name("platform", platform_info, platform, CL_PLATFORM_NAME);
    print_name("platform version", platform_info, platform, CL_PLATFORM_VERSION);
    print_name("device", device_info, device, CL_DEVICE_NAME);

    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, device, NULL, &err);
    CHECK(err);

    /* 4 KiB allocation + free: OpenCL SVM, then libc. */
    double svm_alloc = 1e300, libc_alloc = 1e300;
    for (int r = 0; r < SMALL_RUNS; r++) {
        double t0 = now_s();
        for (int i = 0; i < ALLOC_ITERS; i++) {
            volatile char *p = clSVMAlloc(ctx, CL_MEM_READ_WRITE, SMALL_ALLOC, 0);
            if (p == NULL) {
                fprintf(stderr, "ocl_peer_bench: clSVMAlloc of %d bytes returned NULL\n", SMALL_ALLOC);
                return 1;
            }
            p[0] = 1;
            clSVMFree(ctx, (void *)p);
        }
        svm_alloc = min_d(svm_alloc, (now_s() - t0) / ALLOC_ITERS * 1e9);
    }
    for (int r = 0; r < SMALL_RUNS; r++) {
        double t0 = now_s();
        for (int i = 0; i < ALLOC_ITERS; i++) {
            volatile char *p = aligned_alloc(128, SMALL_ALLOC);
            if (p == NULL) {
                fprintf(stderr, "ocl_peer_bench: aligned_alloc failed\n");
                return 1;
            }
            p[0] = 1;
            free((void *)p);
        }
        libc_alloc = min_d(libc_alloc, (now_s() - t0) / ALLOC_ITERS * 1e9);
    }

    /* Two 64 MiB SVM allocations for the copy and fill rows, touched first so
     * that no timed operation pays for first-touch page faults. */
    unsigned char *a = clSVMAlloc(ctx, CL_MEM_READ_WRITE, BIG, 0);
    unsigned char *b = clSVMAlloc(ctx, CL_MEM_READ_WRITE, BIG, 0);
    if (a == NULL || b == NULL) {
        fprintf(stderr, "ocl_peer_bench: clSVMAlloc of 64 MiB returned NULL\n");
        return 1;
    }
    memset(a, 1, BIG);
    memset(b, 2, BIG);

    /* Blocking 64-byte copy: enqueue -> complete. */
    for (int i = 0; i < 1000; i++) { /* warm-up: the queue's worker threads start */
        CHECK(clEnqueueSVMMemcpy(q, CL_TRUE, b, a, SMALL_COPY, 0, NULL, NULL));
    }
    double copy64 = 1e300;
    for (int r = 0; r < SMALL_RUNS; r++) {
        double t0 = now_s();
        for (int i = 0; i < COPY_ITERS; i++) {
            CHECK(clEnqueueSVMMemcpy(q, CL_TRUE, b, a, SMALL_COPY, 0, NULL, NULL));
        }
        copy64 = min_d(copy64, (now_s() - t0) / COPY_ITERS * 1e9);
    }
    if (b[0] != 1 || b[SMALL_COPY - 1] != 1 || b[SMALL_COPY] != 2) {
        fprintf(stderr, "ocl_peer_bench: the 64-byte copy did not copy exactly 64 bytes\n");
        return 1;
    }

    /* 64 MiB copy, blocking; then libc's memcpy. */
    double cl_copy = 1e300, libc_copy = 1e300;
    for (int r = 0; r < BIG_RUNS; r++) {
        double t0 = now_s();
        CHECK(clEnqueueSVMMemcpy(q, CL_TRUE, b, a, BIG, 0, NULL, NULL));
        cl_copy = min_d(cl_copy, now_s() - t0);
    }
    if (b[BIG / 2] != 1 || b[BIG - 1] != 1) {
        fprintf(stderr, "ocl_peer_bench: the 64 MiB copy did not copy\n");
        return 1;
    }
    for (int r = 0; r < BIG_RUNS; r++) {
        double t0 = now_s();
        memcpy(b, a, BIG);
        clobber(b);
        libc_copy = min_d(libc_copy, now_s() - t0);
    }

    /* 64 MiB fill with a 4-byte pattern, waited for on its event; then memset. */
    const unsigned char pattern[4] = {0x5b, 0x5a, 0x5a, 0x5a};
    double cl_fill = 1e300, libc_fill = 1e300;
    for (int r = 0; r < BIG_RUNS; r++) {
        cl_event done;
        double t0 = now_s();
        CHECK(clEnqueueSVMMemFill(q, b, pattern, sizeof pattern, BIG, 0, NULL, &done));
        CHECK(clWaitForEvents(1, &done));
        cl_fill = min_d(cl_fill, now_s() - t0);
        CHECK(clReleaseEvent(done));
    }
    expect_pattern(b, BIG, pattern, "the 64 MiB fill");
    for (int r = 0; r < BIG_RUNS; r++) {
        double t0 = now_s();
        memset(b, 0x5a, BIG);
        clobber(b);
        libc_fill = min_d(libc_fill, now_s() - t0);
    }

    clSVMFree(ctx, a);
    clSVMFree(ctx, b);
    CHECK(clReleaseCommandQueue(q));
    CHECK(clReleaseContext(ctx));

    printf("cl_svm_alloc_free_4k_ns %.1f\n", svm_alloc);
    printf("libc_alloc_free_4k_ns %.1f\n", libc_alloc);
    printf("cl_svm_memcpy_64b_ns %.1f\n", copy64);
    printf("cl_svm_memcpy_64mib_gbps %.3f\n", (double)BIG / cl_copy / 1e9);
    printf("libc_memcpy_64mib_gbps %.3f\n", (double)BIG / libc_copy / 1e9);
    printf("cl_svm_fill_64mib_gbps %.3f\n", (double)BIG / cl_fill / 1e9);
    printf("libc_memset_64mib_gbps %.3f\n", (double)BIG / libc_fill / 1e9);
    return 0;
}
