/* C tests of what a C user learns about a failed call besides its code,
 * through the real loader (-lOpenCL, OCL_ICD_VENDORS=<dmabridge.icd>), on the
 * host's CPU device:
 * - the pfn_notify of clCreateContext gets the message of a failed call on
 *   the context (clDeviceMemAllocINTEL of SIZE_MAX) or on one of its queues
 *   (clEnqueueMemcpyINTEL with a NULL pointer), once, NUL-terminated, with
 *   no private info; a successful call calls nothing; the callback may call
 *   back into the ICD (it runs with no lock of the ICD held);
 * - DMABRIDGE_LOG=warn prints the message to stderr (checked in a child
 *   process of this program, started with the variable set).
 * Closing line: "N passed, N failed". */
#define _POSIX_C_SOURCE 200809L /* popen */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static cl_platform_id platform;
static cl_device_id device;


static void setup(void) {
    open_cpu_device(&platform, &device, NULL, NULL);
}

/* What the context's pfn_notify saw. */
static struct {
    int calls;
    char errinfo[1024];
    const void *private_info;
    size_t cb;
    void *user_data;
    cl_int reentrant; /* what a call back into the ICD from the callback answered */
} seen;

/* user_data points to the context: a call back into the ICD from the
 * callback must not deadlock. */
static void CL_CALLBACK on_error(const char *errinfo, const void *private_info, size_t cb, void *user_data) {
    seen.calls++;
    snprintf(seen.errinfo, sizeof seen.errinfo, "%s", errinfo ? errinfo : "(null)");
    seen.private_info = private_info;
    seen.cb = cb;
    seen.user_data = user_data;
    cl_uint refs = 0;
    seen.reentrant = clGetContextInfo(*(cl_context *)user_data, CL_CONTEXT_REFERENCE_COUNT, sizeof refs, &refs, NULL);
}

/* A context whose pfn_notify is on_error, with user_data &self. */
static cl_context self;

static cl_context context_with_notify(void) {
    memset(&seen, 0, sizeof seen);
    cl_int err = 1;
    self = clCreateContext(NULL, 1, &device, on_error, &self, &err);
    CHECK(self != NULL && err == CL_SUCCESS);
    return self;
}

static void test_a_failed_usm_alloc_tells_the_contexts_pfn_notify_why(void) {
    cl_context ctx = context_with_notify();
    if (!ctx) return;
    cl_int err = 1;
    clDeviceMemAllocINTEL_fn dev_alloc = EXT_FN(platform, clDeviceMemAllocINTEL);
    clMemFreeINTEL_fn mem_free = EXT_FN(platform, clMemFreeINTEL);
    CHECK(dev_alloc != NULL && mem_free != NULL);
    if (!dev_alloc || !mem_free) return;
    /* A successful call calls nothing. */
    void *p = dev_alloc(ctx, device, NULL, 4096, 0, &err);
    CHECK(p != NULL && err == CL_SUCCESS);
    CHECK_ERR(mem_free(ctx, p), CL_SUCCESS);
    CHECK(seen.calls == 0);
    err = 0;
    p = dev_alloc(ctx, device, NULL, SIZE_MAX, 0, &err);
    CHECK(p == NULL && err == CL_INVALID_BUFFER_SIZE);
    CHECK(seen.calls == 1);
    printf("    errinfo: %s\n", seen.errinfo);
    CHECK(strstr(seen.errinfo, "CL_DEVICE_MAX_MEM_ALLOC_SIZE") != NULL);
    CHECK(seen.private_info == NULL && seen.cb == 0);
    CHECK(seen.user_data == &self);
    CHECK_ERR(seen.reentrant, CL_SUCCESS);
    CHECK_ERR(clReleaseContext(ctx), CL_SUCCESS);
}

static void test_a_failed_enqueue_tells_the_pfn_notify_of_the_queues_context(void) {
    cl_context ctx = context_with_notify();
    if (!ctx) return;
    cl_int err = 1;
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, device, NULL, &err);
    CHECK(q != NULL && err == CL_SUCCESS);
    clEnqueueMemcpyINTEL_fn memcpy_ = EXT_FN(platform, clEnqueueMemcpyINTEL);
    CHECK(memcpy_ != NULL);
    if (!q || !memcpy_) return;
    char src[16] = {0};
    CHECK_ERR(memcpy_(q, CL_TRUE, NULL, src, sizeof src, 0, NULL, NULL), CL_INVALID_VALUE);
    CHECK(seen.calls == 1);
    printf("    errinfo: %s\n", seen.errinfo);
    CHECK(strstr(seen.errinfo, "dst_ptr is NULL") != NULL);
    CHECK_ERR(seen.reentrant, CL_SUCCESS);
    /* An error without a message (an invalid handle) and a call on no
     * context call nothing. */
    CHECK_ERR(memcpy_(NULL, CL_TRUE, NULL, src, sizeof src, 0, NULL, NULL), CL_INVALID_COMMAND_QUEUE);
    CHECK(seen.calls == 1);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
}

/* The child of test_dmabridge_log_prints_the_message_to_stderr: a failed
 * call with DMABRIDGE_LOG set in its environment. */
static int child(void) {
    platform = dmabridge_platform();
    if (!platform || clGetDeviceIDs(platform, CL_DEVICE_TYPE_CPU, 1, &device, NULL) != CL_SUCCESS) return 2;
    cl_int err = 0;
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    clDeviceMemAllocINTEL_fn dev_alloc = EXT_FN(platform, clDeviceMemAllocINTEL);
    if (!ctx || !dev_alloc) return 2;
    void *p = dev_alloc(ctx, device, NULL, SIZE_MAX, 0, &err);
    clReleaseContext(ctx);
    return p == NULL && err == CL_INVALID_BUFFER_SIZE ? 0 : 3;
}

static const char *self_path;

static void run_child(const char *env, char *out, size_t cap) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s '%s' --child 2>&1", env, self_path);
    FILE *f = popen(cmd, "r");
    CHECK(f != NULL);
    if (!f) return;
    size_t n = fread(out, 1, cap - 1, f);
    out[n] = 0;
    CHECK(pclose(f) == 0);
}

static void test_dmabridge_log_prints_the_message_to_stderr(void) {
    static char out[8192];
    run_child("DMABRIDGE_LOG=warn", out, sizeof out);
    printf("    child's stderr: %s", out);
    CHECK(strstr(out, "CL_DEVICE_MAX_MEM_ALLOC_SIZE") != NULL);
    run_child("DMABRIDGE_LOG=", out, sizeof out);
    CHECK(strstr(out, "CL_DEVICE_MAX_MEM_ALLOC_SIZE") == NULL);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--child") == 0) return child();
    self_path = argv[0];
    setup();
    int ready = platform && device;
    run_test("notify::a_failed_usm_alloc_tells_the_contexts_pfn_notify_why",
             test_a_failed_usm_alloc_tells_the_contexts_pfn_notify_why, ready);
    run_test("notify::a_failed_enqueue_tells_the_pfn_notify_of_the_queues_context",
             test_a_failed_enqueue_tells_the_pfn_notify_of_the_queues_context, ready);
    run_test("notify::dmabridge_log_prints_the_message_to_stderr", test_dmabridge_log_prints_the_message_to_stderr,
             ready);
    return finish_tests();
}
