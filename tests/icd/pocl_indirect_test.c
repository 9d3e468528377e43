/* C tests of cl_intel_unified_shared_memory's indirect access with kernels
 * from source (PoCL, driver/dmabridge-icd/src/pocl), through the real loader:
 * a kernel that reaches USM host, device and shared allocations only through
 * pointers stored in another allocation (a struct of pointers) writes them,
 * with CL_KERNEL_EXEC_INFO_INDIRECT_{HOST,DEVICE,SHARED}_ACCESS_INTEL or with
 * the allocations named by CL_KERNEL_EXEC_INFO_USM_PTRS_INTEL; a launch with
 * a flag or a list counts as using what it names, so clMemBlockingFreeINTEL
 * of an allocation it reaches only indirectly waits for it; and the error
 * codes of clSetKernelExecInfo for bad values on such a kernel. Without PoCL
 * every test is ignored, unless DMABRIDGE_EXPECT_POCL=1 (tests/icd/run on
 * x86_64), when that fails. In the QEMU guests (--devices-only) nothing
 * runs: these tests need no device, and PoCL's compiles are slow there.
 * Closing line: "N passed, N failed". */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static cl_platform_id platform;
static cl_device_id device;
static cl_context ctx;
static cl_command_queue queue;
static clHostMemAllocINTEL_fn host_alloc;
static clDeviceMemAllocINTEL_fn device_alloc;
static clSharedMemAllocINTEL_fn shared_alloc;
static clMemFreeINTEL_fn mem_free;
static clMemBlockingFreeINTEL_fn blocking_free;
static clSetKernelArgMemPointerINTEL_fn set_arg_ptr;

/* The kernel's only argument is the table; the three arrays it writes are
 * reached through the pointers stored in it. */
static const char *SRC =
    "typedef struct { global uint *host; global uint *dev; global uint *shared; } table_t;\n"
    "kernel void through(global const table_t *t, uint v) {\n"
    "    size_t i = get_global_id(0);\n"
    "    t->host[i] = v + (uint)i; t->dev[i] = 2u * v + (uint)i; t->shared[i] = 3u * v + (uint)i;\n"
    "}\n";

typedef struct {
    cl_uint *host, *dev, *shared;
} table_t;

enum { N = 1024 };

static cl_program program;

static cl_kernel new_kernel(void) {
    cl_int err = 1;
    cl_kernel k = clCreateKernel(program, "through", &err);
    CHECK_ERR(err, CL_SUCCESS);
    return k;
}

/* The three arrays and the table naming them (itself a shared allocation). */
static table_t *new_table(void) {
    cl_int err = 1;
    table_t *t = shared_alloc(ctx, device, NULL, sizeof *t, 0, &err);
    CHECK(t != NULL);
    if (!t) return NULL;
    t->host = host_alloc(ctx, NULL, N * 4, 0, &err);
    t->dev = device_alloc(ctx, device, NULL, N * 4, 0, &err);
    t->shared = shared_alloc(ctx, device, NULL, N * 4, 0, &err);
    CHECK(t->host && t->dev && t->shared);
    return t;
}

static void free_table(table_t *t) {
    if (!t) return;
    if (t->host) mem_free(ctx, t->host);
    if (t->dev) mem_free(ctx, t->dev);
    if (t->shared) mem_free(ctx, t->shared);
    mem_free(ctx, t);
}

static int holds(const cl_uint *p, cl_uint first) {
    int ok = 1;
    for (cl_uint i = 0; i < N; i++) ok &= p[i] == first + i;
    return ok;
}

/* through(t, v) over N items, waiting for `gate` when not NULL. */
static cl_event launch(cl_kernel k, table_t *t, cl_uint v, cl_event gate) {
    CHECK_ERR(set_arg_ptr(k, 0, t), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(k, 1, sizeof v, &v), CL_SUCCESS);
    size_t g = N;
    cl_event ev = NULL;
    CHECK_ERR(clEnqueueNDRangeKernel(queue, k, 1, NULL, &g, NULL, gate ? 1 : 0, gate ? &gate : NULL, &ev), CL_SUCCESS);
    return ev;
}

static void test_flags_reach_every_kind(void) {
    cl_kernel k = new_kernel();
    table_t *t = new_table();
    if (!k || !t || !t->host || !t->dev || !t->shared) goto out;
    cl_bool yes = CL_TRUE;
    CHECK_ERR(clSetKernelExecInfo(k, CL_KERNEL_EXEC_INFO_INDIRECT_HOST_ACCESS_INTEL, sizeof yes, &yes), CL_SUCCESS);
    CHECK_ERR(clSetKernelExecInfo(k, CL_KERNEL_EXEC_INFO_INDIRECT_DEVICE_ACCESS_INTEL, sizeof yes, &yes), CL_SUCCESS);
    CHECK_ERR(clSetKernelExecInfo(k, CL_KERNEL_EXEC_INFO_INDIRECT_SHARED_ACCESS_INTEL, sizeof yes, &yes), CL_SUCCESS);
    cl_event ev = launch(k, t, 10, NULL);
    CHECK_ERR(clWaitForEvents(1, &ev), CL_SUCCESS);
    /* The CPU device's allocations of every kind are host memory. */
    CHECK(holds(t->host, 10) && holds(t->dev, 20) && holds(t->shared, 30));
    clReleaseEvent(ev);
out:
    free_table(t);
    if (k) clReleaseKernel(k);
}

static void test_usm_ptrs_list_reaches_what_it_names(void) {
    cl_kernel k = new_kernel();
    table_t *t = new_table();
    if (!k || !t || !t->host || !t->dev || !t->shared) goto out;
    void *ptrs[3] = {t->host, t->dev, t->shared};
    CHECK_ERR(clSetKernelExecInfo(k, CL_KERNEL_EXEC_INFO_USM_PTRS_INTEL, sizeof ptrs, ptrs), CL_SUCCESS);
    cl_event ev = launch(k, t, 40, NULL);
    CHECK_ERR(clWaitForEvents(1, &ev), CL_SUCCESS);
    CHECK(holds(t->host, 40) && holds(t->dev, 80) && holds(t->shared, 120));
    clReleaseEvent(ev);
    /* A clone keeps the list (and the new kernel runs the same). */
    cl_int err = 1;
    cl_kernel c = clCloneKernel(k, &err);
    CHECK_ERR(err, CL_SUCCESS);
    if (c) {
        ev = launch(c, t, 50, NULL);
        CHECK_ERR(clWaitForEvents(1, &ev), CL_SUCCESS);
        CHECK(holds(t->host, 50) && holds(t->dev, 100) && holds(t->shared, 150));
        clReleaseEvent(ev);
        clReleaseKernel(c);
    }
out:
    free_table(t);
    if (k) clReleaseKernel(k);
}

/* Completes a user event after 150 ms, on its own thread. */
static void *open_gate_later(void *gate) {
    usleep(150000);
    clSetUserEventStatus((cl_event)gate, CL_COMPLETE);
    return NULL;
}

/* A launch held by a user event may reach, besides the table's arrays, any
 * allocation of kind `which` (0 host, 1 device, 2 shared): the flag `flag`
 * is set, or (flag 0) a further allocation is named in the USM_PTRS list.
 * clMemBlockingFreeINTEL of a further allocation of that kind, which the
 * kernel never touches, must wait until the launch completed: the text's
 * rule is that a kernel with indirect access counts as using every
 * allocation of the kinds it names (and the list's allocations). Freeing an
 * untouched allocation keeps a failure a failed check, not a crash. */
static void blocking_free_waits(cl_kernel_exec_info flag, int which) {
    cl_int err = 1;
    cl_kernel k = new_kernel();
    table_t *t = new_table();
    cl_event gate = clCreateUserEvent(ctx, &err);
    void *extra = which == 0   ? host_alloc(ctx, NULL, N * 4, 0, &err)
                  : which == 1 ? device_alloc(ctx, device, NULL, N * 4, 0, &err)
                               : shared_alloc(ctx, device, NULL, N * 4, 0, &err);
    if (!k || !t || !t->host || !t->dev || !t->shared || !gate || !extra) goto out;
    if (flag) {
        cl_bool yes = CL_TRUE;
        CHECK_ERR(clSetKernelExecInfo(k, flag, sizeof yes, &yes), CL_SUCCESS);
    } else {
        void *ptrs[1] = {extra};
        CHECK_ERR(clSetKernelExecInfo(k, CL_KERNEL_EXEC_INFO_USM_PTRS_INTEL, sizeof ptrs, ptrs), CL_SUCCESS);
    }
    cl_event ev = launch(k, t, 7, gate);
    pthread_t opener;
    CHECK(pthread_create(&opener, NULL, open_gate_later, gate) == 0);
    CHECK_ERR(blocking_free(ctx, extra), CL_SUCCESS);
    extra = NULL;
    cl_int st = 1;
    CHECK_ERR(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL), CL_SUCCESS);
    if (st != CL_COMPLETE) printf("    the free returned while the launch was %d (not CL_COMPLETE)\n", st);
    CHECK(st == CL_COMPLETE);
    pthread_join(opener, NULL);
    CHECK_ERR(clWaitForEvents(1, &ev), CL_SUCCESS);
    CHECK(holds(t->host, 7) && holds(t->dev, 14) && holds(t->shared, 21));
    clReleaseEvent(ev);
out:
    if (extra) mem_free(ctx, extra);
    if (gate) clReleaseEvent(gate);
    free_table(t);
    if (k) clReleaseKernel(k);
}

static void test_blocking_free_waits_for_indirect_host_access(void) {
    blocking_free_waits(CL_KERNEL_EXEC_INFO_INDIRECT_HOST_ACCESS_INTEL, 0);
}
static void test_blocking_free_waits_for_indirect_device_access(void) {
    blocking_free_waits(CL_KERNEL_EXEC_INFO_INDIRECT_DEVICE_ACCESS_INTEL, 1);
}
static void test_blocking_free_waits_for_indirect_shared_access(void) {
    blocking_free_waits(CL_KERNEL_EXEC_INFO_INDIRECT_SHARED_ACCESS_INTEL, 2);
}
static void test_blocking_free_waits_for_usm_ptrs(void) {
    blocking_free_waits(0, 1);
}

/* clSetKernelExecInfo's codes on a kernel from source (OpenCL 3.0 and the
 * USM text): CL_INVALID_VALUE for an unknown name, a NULL value, a flag
 * that is not a cl_bool's size, a list that is not whole pointers;
 * CL_INVALID_KERNEL for a handle that is none. */
static void test_exec_info_errors(void) {
    cl_kernel k = new_kernel();
    if (!k) return;
    cl_bool yes = CL_TRUE;
    void *ptrs[2] = {&yes, &yes};
    const cl_kernel_exec_info flags[3] = {CL_KERNEL_EXEC_INFO_INDIRECT_HOST_ACCESS_INTEL,
                                          CL_KERNEL_EXEC_INFO_INDIRECT_DEVICE_ACCESS_INTEL,
                                          CL_KERNEL_EXEC_INFO_INDIRECT_SHARED_ACCESS_INTEL};
    for (int i = 0; i < 3; i++) {
        CHECK_ERR(clSetKernelExecInfo(k, flags[i], sizeof yes, NULL), CL_INVALID_VALUE);
        CHECK_ERR(clSetKernelExecInfo(k, flags[i], 0, &yes), CL_INVALID_VALUE);
        CHECK_ERR(clSetKernelExecInfo(k, flags[i], sizeof yes - 1, &yes), CL_INVALID_VALUE);
        CHECK_ERR(clSetKernelExecInfo(k, flags[i], sizeof(cl_ulong), ptrs), CL_INVALID_VALUE);
        cl_bool no = CL_FALSE;
        CHECK_ERR(clSetKernelExecInfo(k, flags[i], sizeof no, &no), CL_SUCCESS);
    }
    CHECK_ERR(clSetKernelExecInfo(k, CL_KERNEL_EXEC_INFO_USM_PTRS_INTEL, sizeof ptrs, NULL), CL_INVALID_VALUE);
    CHECK_ERR(clSetKernelExecInfo(k, CL_KERNEL_EXEC_INFO_USM_PTRS_INTEL, sizeof ptrs - 1, ptrs), CL_INVALID_VALUE);
    CHECK_ERR(clSetKernelExecInfo(k, CL_KERNEL_EXEC_INFO_USM_PTRS_INTEL, SIZE_MAX - 7, ptrs), CL_INVALID_VALUE);
    CHECK_ERR(clSetKernelExecInfo(k, 0x4204, sizeof yes, &yes), CL_INVALID_VALUE);
    CHECK_ERR(clSetKernelExecInfo(k, 0, sizeof yes, &yes), CL_INVALID_VALUE);
    CHECK_ERR(clSetKernelExecInfo(NULL, CL_KERNEL_EXEC_INFO_INDIRECT_HOST_ACCESS_INTEL, sizeof yes, &yes),
              CL_INVALID_KERNEL);
    CHECK_ERR(clSetKernelExecInfo((cl_kernel)ctx, CL_KERNEL_EXEC_INFO_USM_PTRS_INTEL, sizeof ptrs, ptrs),
              CL_INVALID_KERNEL);
    /* An empty list is the initial set: accepted. */
    CHECK_ERR(clSetKernelExecInfo(k, CL_KERNEL_EXEC_INFO_USM_PTRS_INTEL, 0, ptrs), CL_SUCCESS);
    clReleaseKernel(k);
}

static const struct test_case tests[] = {
    {"pocl_indirect::flags_reach_every_kind", test_flags_reach_every_kind},
    {"pocl_indirect::usm_ptrs_list_reaches_what_it_names", test_usm_ptrs_list_reaches_what_it_names},
    {"pocl_indirect::blocking_free_waits_for_indirect_host_access", test_blocking_free_waits_for_indirect_host_access},
    {"pocl_indirect::blocking_free_waits_for_indirect_device_access",
     test_blocking_free_waits_for_indirect_device_access},
    {"pocl_indirect::blocking_free_waits_for_indirect_shared_access",
     test_blocking_free_waits_for_indirect_shared_access},
    {"pocl_indirect::blocking_free_waits_for_usm_ptrs", test_blocking_free_waits_for_usm_ptrs},
    {"pocl_indirect::exec_info_errors", test_exec_info_errors},
};

int main(int argc, char **argv) {
    /* Nothing here needs a device: the guests skip the lot without loading
     * PoCL (seconds under TCG). */
    if (devices_only(argc, argv)) {
        IGNORE_TESTS(tests, "--devices-only: it runs on the host (tests/icd/run)");
        return finish_tests();
    }
    open_cpu_device(&platform, &device, &ctx, &queue);
    if (queue) {
        host_alloc = EXT_FN(platform, clHostMemAllocINTEL);
        device_alloc = EXT_FN(platform, clDeviceMemAllocINTEL);
        shared_alloc = EXT_FN(platform, clSharedMemAllocINTEL);
        mem_free = EXT_FN(platform, clMemFreeINTEL);
        blocking_free = EXT_FN(platform, clMemBlockingFreeINTEL);
        set_arg_ptr = EXT_FN(platform, clSetKernelArgMemPointerINTEL);
    }
    const char *why = no_pocl_here(device);
    if (why) {
        IGNORE_TESTS(tests, why);
    } else {
        int ready = queue && host_alloc && device_alloc && shared_alloc && mem_free && blocking_free && set_arg_ptr;
        if (ready) {
            cl_int err = 1;
            program = clCreateProgramWithSource(ctx, 1, &SRC, NULL, &err);
            err = clBuildProgram(program, 1, &device, NULL, NULL, NULL);
            if (err != CL_SUCCESS) {
                char log[4096] = {0};
                clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
                printf("    the program did not build (%d): %s\n", err, log);
                ready = 0;
            }
        }
        RUN_TESTS(tests, ready);
        if (program) clReleaseProgram(program);
    }
    close_cpu_device(ctx, queue);
    return finish_tests();
}
