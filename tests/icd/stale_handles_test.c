/* Released handles through the real loader, after heavy churn.
 *
 * ocl-icd reads the dispatch word of every handle before dmabridge sees the
 * call, so a released handle answers CL_INVALID_* only if its first words
 * are still readable and still point to dmabridge's dispatch table, also
 * after the process has allocated and freed a great deal since the release
 * (right after a release the memory may still hold the old words by luck).
 * The churn creates and releases many more objects of each kind than the
 * ICD's quarantine of released headers holds, with libc allocations of many
 * sizes between them, so freed memory is reused.
 *
 * The test runs in a child process (forked before any OpenCL call), so that
 * a crash inside the loader is reported as a failure with its signal. */
#define _POSIX_C_SOURCE 200809L /* fork, waitpid, strsignal */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static cl_platform_id platform;
static cl_device_id device;

/* Objects made and released ROUNDS times each (the ICD quarantines 4096
   released headers before it reuses one). */
#define ROUNDS 6000

static void churn(cl_context ctx) {
    cl_int err;
    void *junk[32] = {0};
    for (int i = 0; i < ROUNDS; i++) {
        cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64 + (size_t)(i % 97) * 64, NULL, &err);
        cl_event e = clCreateUserEvent(ctx, &err);
        free(junk[i % 32]);
        size_t n = 16 + (size_t)(i * 7919) % 512;
        junk[i % 32] = malloc(n);
        if (junk[i % 32]) memset(junk[i % 32], 0xa5, n); /* no stale dispatch word left by luck */
        if (m) clReleaseMemObject(m);
        if (e) {
            clSetUserEventStatus(e, CL_COMPLETE);
            clReleaseEvent(e);
        }
        if (i % 16 == 0) {
            cl_command_queue q = clCreateCommandQueueWithProperties(ctx, device, NULL, &err);
            if (q) clReleaseCommandQueue(q);
            cl_context c = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
            if (c) clReleaseContext(c);
        }
    }
    for (int i = 0; i < 32; i++) free(junk[i]);
}

static void test_released_handles_after_churn(void) {
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK(ctx != NULL);
    /* Made, then released: the stale handles. */
    cl_context old_ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    cl_command_queue old_q = clCreateCommandQueueWithProperties(ctx, device, NULL, &err);
    cl_mem old_mem = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4096, NULL, &err);
    cl_event old_ev = clCreateUserEvent(ctx, &err);
    CHECK(old_ctx && old_q && old_mem && old_ev);
    CHECK_ERR(clSetUserEventStatus(old_ev, CL_COMPLETE), CL_SUCCESS);
    CHECK_ERR(clReleaseEvent(old_ev), CL_SUCCESS);
    CHECK_ERR(clReleaseMemObject(old_mem), CL_SUCCESS);
    CHECK_ERR(clReleaseCommandQueue(old_q), CL_SUCCESS);
    CHECK_ERR(clReleaseContext(old_ctx), CL_SUCCESS);
    churn(ctx);
    size_t size = 0;
    cl_uint count = 0;
    CHECK_ERR(clReleaseMemObject(old_mem), CL_INVALID_MEM_OBJECT);
    CHECK_ERR(clRetainMemObject(old_mem), CL_INVALID_MEM_OBJECT);
    CHECK_ERR(clGetMemObjectInfo(old_mem, CL_MEM_SIZE, sizeof size, &size, NULL), CL_INVALID_MEM_OBJECT);
    CHECK_ERR(clReleaseEvent(old_ev), CL_INVALID_EVENT);
    CHECK_ERR(clWaitForEvents(1, &old_ev), CL_INVALID_EVENT);
    CHECK_ERR(clReleaseCommandQueue(old_q), CL_INVALID_COMMAND_QUEUE);
    CHECK_ERR(clFinish(old_q), CL_INVALID_COMMAND_QUEUE);
    CHECK_ERR(clReleaseContext(old_ctx), CL_INVALID_CONTEXT);
    CHECK_ERR(clGetContextInfo(old_ctx, CL_CONTEXT_NUM_DEVICES, sizeof count, &count, NULL), CL_INVALID_CONTEXT);
    CHECK(clCreateBuffer(old_ctx, CL_MEM_READ_WRITE, 64, NULL, &err) == NULL && err == CL_INVALID_CONTEXT);
    /* The live context still works. */
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64, NULL, &err);
    CHECK(m != NULL);
    if (m) CHECK_ERR(clReleaseMemObject(m), CL_SUCCESS);
    CHECK_ERR(clReleaseContext(ctx), CL_SUCCESS);
}

int main(void) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        platform = dmabridge_platform();
        if (platform) clGetDeviceIDs(platform, CL_DEVICE_TYPE_CPU, 1, &device, NULL);
        run_test("released_handles_after_churn", test_released_handles_after_churn, platform && device);
        int rc = finish_tests();
        fflush(stdout);
        _exit(rc);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) {
        perror("waitpid");
        return 1;
    }
    if (WIFSIGNALED(status)) {
        printf("    the test process died of signal %d (%s): a call on a released handle crashed\n",
               WTERMSIG(status), strsignal(WTERMSIG(status)));
        printf("test icd::released_handles_after_churn ... FAILED\n");
        printf("0 passed, 1 failed\n");
        return 1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
