/* C tests of the dmabridge ICD on its accelerator devices, through the real
 * loader (-lOpenCL, OCL_ICD_VENDORS=<dmabridge.icd>): they need the QEMU
 * guest's devices (make test-guest-icd: a QEMU edu function bound to
 * vfio-pci, and DMABRIDGE_BAR_DEVICE naming a PCI BAR).
 *
 * On the edu device: a context and a queue on it, clDeviceMemAllocINTEL, and
 * clEnqueueMemcpyINTEL host -> device -> host by DMA, bytes checked. On the
 * BAR device: a buffer written, filled and read back through its queue, and
 * a device allocation in BAR memory, copied to and from. Both: error codes of
 * invalid calls. Where a device is absent (the development host) its tests
 * are reported as "ignored" with the reason, and counted apart.
 *
 * Closing lines (check.h): "N ignored" and "N passed, N failed". Sizes
 * are small: edu's DMA is slow under TCG. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static cl_platform_id platform;
/* The first edu and BAR accelerators (NULL when absent). */
static cl_device_id edu, bar;
static cl_uint accelerators;

static clDeviceMemAllocINTEL_fn dev_alloc;
static clMemFreeINTEL_fn mem_free;
static clMemBlockingFreeINTEL_fn blocking_free;
static clGetMemAllocInfoINTEL_fn alloc_info;
static clEnqueueMemcpyINTEL_fn usm_memcpy;


static void setup(void) {
    platform = dmabridge_platform();
    if (!platform) return;
    dev_alloc = EXT_FN(platform, clDeviceMemAllocINTEL);
    mem_free = EXT_FN(platform, clMemFreeINTEL);
    blocking_free = EXT_FN(platform, clMemBlockingFreeINTEL);
    alloc_info = EXT_FN(platform, clGetMemAllocInfoINTEL);
    usm_memcpy = EXT_FN(platform, clEnqueueMemcpyINTEL);
    cl_device_id devs[16];
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ACCELERATOR, 16, devs, &accelerators) != CL_SUCCESS) accelerators = 0;
    if (accelerators > 16) accelerators = 16;
    for (cl_uint i = 0; i < accelerators; i++) {
        char name[128] = {0};
        clGetDeviceInfo(devs[i], CL_DEVICE_NAME, sizeof name, name, NULL);
        if (!edu && strstr(name, "edu")) edu = devs[i];
        if (!bar && strstr(name, "bar")) bar = devs[i];
    }
}

static void fill_pattern(unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(i * 31 + seed);
}

/* Accelerators are listed by type, and only them. */
static void test_accelerators_are_listed(void) {
    CHECK(accelerators >= 2);
    cl_device_type type = 0;
    CHECK_ERR(clGetDeviceInfo(edu, CL_DEVICE_TYPE, sizeof type, &type, NULL), CL_SUCCESS);
    CHECK(type == CL_DEVICE_TYPE_ACCELERATOR);
    CHECK_ERR(clGetDeviceInfo(bar, CL_DEVICE_TYPE, sizeof type, &type, NULL), CL_SUCCESS);
    CHECK(type == CL_DEVICE_TYPE_ACCELERATOR);
    cl_uint all = 0;
    CHECK_ERR(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, NULL, &all), CL_SUCCESS);
    CHECK(all == accelerators + 1); /* and the CPU device */
}

/* A device allocation on `dev`, a copy host -> device -> host through a
 * queue of `dev`, bytes checked; the allocation's info. */
static void device_alloc_round_trip(cl_device_id dev, size_t size) {
    cl_int err = 1;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK(ctx != NULL && err == CL_SUCCESS);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
    CHECK(q != NULL && err == CL_SUCCESS);
    if (!ctx || !q) return;
    unsigned char *d = dev_alloc(ctx, dev, NULL, size, 0, &err);
    CHECK(d != NULL && err == CL_SUCCESS);
    unsigned char *src = malloc(size), *back = malloc(size);
    CHECK(src && back);
    if (d && src && back) {
        cl_unified_shared_memory_type_intel type = 0;
        CHECK_ERR(alloc_info(ctx, d, CL_MEM_ALLOC_TYPE_INTEL, sizeof type, &type, NULL), CL_SUCCESS);
        CHECK(type == CL_MEM_TYPE_DEVICE_INTEL);
        cl_device_id owner = NULL;
        CHECK_ERR(alloc_info(ctx, d, CL_MEM_ALLOC_DEVICE_INTEL, sizeof owner, &owner, NULL), CL_SUCCESS);
        CHECK(owner == dev);
        size_t got = 0;
        CHECK_ERR(alloc_info(ctx, d, CL_MEM_ALLOC_SIZE_INTEL, sizeof got, &got, NULL), CL_SUCCESS);
        CHECK(got >= size);
        fill_pattern(src, size, 7);
        memset(back, 0, size);
        CHECK_ERR(usm_memcpy(q, CL_TRUE, d, src, size, 0, NULL, NULL), CL_SUCCESS);
        cl_event ev = NULL;
        CHECK_ERR(usm_memcpy(q, CL_FALSE, back, d, size, 0, NULL, &ev), CL_SUCCESS);
        CHECK_ERR(clWaitForEvents(1, &ev), CL_SUCCESS);
        cl_int status = 1;
        CHECK_ERR(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL), CL_SUCCESS);
        CHECK(status == CL_COMPLETE);
        if (ev) clReleaseEvent(ev);
        CHECK(memcmp(src, back, size) == 0);
        /* Part of it, at an offset, into the middle of the host buffer. */
        memset(back, 0, size);
        CHECK_ERR(usm_memcpy(q, CL_TRUE, back + 100, d + 300, 500, 0, NULL, NULL), CL_SUCCESS);
        CHECK(memcmp(back + 100, src + 300, 500) == 0 && back[99] == 0 && back[600] == 0);
        CHECK_ERR(blocking_free(ctx, d), CL_SUCCESS);
    }
    free(src);
    free(back);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
}

static void test_edu_device_memcpy_by_dma(void) {
    device_alloc_round_trip(edu, 4096 + 512);
}

static void test_bar_device_alloc_in_bar_memory(void) {
    device_alloc_round_trip(bar, 8192);
}

static void test_bar_buffer_write_fill_read(void) {
    cl_int err = 1;
    cl_context ctx = clCreateContext(NULL, 1, &bar, NULL, NULL, &err);
    CHECK(ctx != NULL && err == CL_SUCCESS);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, bar, NULL, &err);
    CHECK(q != NULL && err == CL_SUCCESS);
    if (!ctx || !q) return;
    enum { SIZE = 8192 };
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, SIZE, NULL, &err);
    CHECK(b != NULL && err == CL_SUCCESS);
    static unsigned char src[SIZE], back[SIZE];
    fill_pattern(src, SIZE, 3);
    CHECK_ERR(clEnqueueWriteBuffer(q, b, CL_TRUE, 0, SIZE, src, 0, NULL, NULL), CL_SUCCESS);
    cl_uint pattern = 0xa1b2c3d4u;
    CHECK_ERR(clEnqueueFillBuffer(q, b, &pattern, sizeof pattern, 1024, 2048, 0, NULL, NULL), CL_SUCCESS);
    memset(back, 0, SIZE);
    CHECK_ERR(clEnqueueReadBuffer(q, b, CL_TRUE, 0, SIZE, back, 0, NULL, NULL), CL_SUCCESS);
    CHECK(memcmp(back, src, 1024) == 0);
    CHECK(memcmp(back + 3072, src + 3072, SIZE - 3072) == 0);
    int filled = 1;
    for (size_t i = 1024; i < 3072; i += sizeof pattern) {
        cl_uint v;
        memcpy(&v, back + i, sizeof v);
        if (v != pattern) filled = 0;
    }
    CHECK(filled);
    /* Reads past the end are refused and change nothing. */
    CHECK_ERR(clEnqueueReadBuffer(q, b, CL_TRUE, SIZE - 4, 8, back, 0, NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(clFinish(q), CL_SUCCESS);
    clReleaseMemObject(b);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
}

/* Invalid calls on the accelerators answer their codes. */
static void test_accelerator_errors(void) {
    cl_int err = 1;
    cl_context ctx = clCreateContext(NULL, 1, &edu, NULL, NULL, &err);
    CHECK(ctx != NULL && err == CL_SUCCESS);
    if (!ctx) return;
    cl_device_id devs[] = {edu, bar};
    for (size_t i = 0; i < 2; i++) {
        cl_context c = clCreateContext(NULL, 1, &devs[i], NULL, NULL, &err);
        CHECK(c != NULL);
        if (!c) continue;
        cl_ulong max = 0;
        CHECK_ERR(clGetDeviceInfo(devs[i], CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max, &max, NULL), CL_SUCCESS);
        CHECK(max > 0);
        err = 1;
        void *p = dev_alloc(c, devs[i], NULL, (size_t)max + 1, 0, &err);
        CHECK(p == NULL && err == CL_INVALID_BUFFER_SIZE);
        err = 1;
        p = dev_alloc(c, devs[i], NULL, 0, 0, &err);
        CHECK(p == NULL && err == CL_INVALID_BUFFER_SIZE);
        clReleaseContext(c);
    }
    /* A device allocation on a device the context does not have. */
    err = 1;
    void *p = dev_alloc(ctx, bar, NULL, 4096, 0, &err);
    CHECK(p == NULL && err == CL_INVALID_DEVICE);
    /* A queue on a device the context does not have. */
    err = 1;
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, bar, NULL, &err);
    CHECK(q == NULL && err == CL_INVALID_DEVICE);
    q = clCreateCommandQueueWithProperties(ctx, edu, NULL, &err);
    CHECK(q != NULL);
    if (q) {
        unsigned char buf[64];
        CHECK_ERR(usm_memcpy(q, CL_TRUE, NULL, buf, sizeof buf, 0, NULL, NULL), CL_INVALID_VALUE);
        CHECK_ERR(usm_memcpy(q, CL_TRUE, buf, NULL, sizeof buf, 0, NULL, NULL), CL_INVALID_VALUE);
        /* Overlapping source and destination. */
        CHECK_ERR(usm_memcpy(q, CL_TRUE, buf + 8, buf, 32, 0, NULL, NULL), CL_MEM_COPY_OVERLAP);
        clReleaseCommandQueue(q);
    }
    static char not_usm[16];
    CHECK_ERR(mem_free(ctx, not_usm), CL_INVALID_VALUE);
    clReleaseContext(ctx);
}

int main(void) {
    setup();
    struct {
        const char *name;
        void (*f)(void);
        int needs_edu, needs_bar;
    } tests[] = {
        {"accelerators::listed", test_accelerators_are_listed, 1, 1},
        {"accelerators::edu_device_memcpy_by_dma", test_edu_device_memcpy_by_dma, 1, 0},
        {"accelerators::bar_device_alloc_in_bar_memory", test_bar_device_alloc_in_bar_memory, 0, 1},
        {"accelerators::bar_buffer_write_fill_read", test_bar_buffer_write_fill_read, 0, 1},
        {"accelerators::errors", test_accelerator_errors, 1, 1},
    };
    int ready = platform && dev_alloc && mem_free && blocking_free && alloc_info && usm_memcpy;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (platform && ((tests[i].needs_edu && !edu) || (tests[i].needs_bar && !bar))) {
            char why[256];
            snprintf(why, sizeof why, "needs %s%s%s, absent here: %u accelerator(s) listed; run in the QEMU guest: make test-guest-icd",
                     tests[i].needs_edu && !edu ? "an edu device bound to vfio-pci" : "",
                     tests[i].needs_edu && !edu && tests[i].needs_bar && !bar ? " and " : "",
                     tests[i].needs_bar && !bar ? "a BAR device (DMABRIDGE_BAR_DEVICE)" : "", accelerators);
            ignore_test(tests[i].name, why);
        } else {
            run_test(tests[i].name, tests[i].f, ready);
        }
    }
    return finish_tests();
}
