/* C tests of the dmabridge ICD's context entry points beyond creation,
 * through the real loader (-lOpenCL, OCL_ICD_VENDORS=<dmabridge.icd>), on the
 * host's CPU device: clSetContextDestructorCallback (callbacks run in reverse
 * order of registration once the last reference, the application's or a
 * queue's, buffer's or event's, is gone) and clGetSupportedImageFormats (no
 * formats; its argument rules). Closing line: "N passed, N failed". */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
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

/* What the destructor callbacks saw: the order they ran in and the handle. */
static struct {
    int order[8];
    int count;
    cl_context handle[8];
} seen;

static void CL_CALLBACK on_destroy(cl_context c, void *user_data) {
    if (seen.count < 8) {
        seen.handle[seen.count] = c;
        seen.order[seen.count++] = (int)(intptr_t)user_data;
    }
}

static void test_destructor_callbacks_run_in_reverse_order_when_the_last_reference_goes(void) {
    memset(&seen, 0, sizeof seen);
    cl_int err = 1;
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK(ctx != NULL && err == CL_SUCCESS);
    if (!ctx) return;
    for (intptr_t i = 1; i <= 3; i++) CHECK_ERR(clSetContextDestructorCallback(ctx, on_destroy, (void *)i), CL_SUCCESS);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, device, NULL, &err);
    CHECK(q != NULL && err == CL_SUCCESS);
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 256, NULL, &err);
    CHECK(b != NULL && err == CL_SUCCESS);
    char data[256];
    memset(data, 0x5a, sizeof data);
    cl_event ev = NULL;
    CHECK_ERR(clEnqueueWriteBuffer(q, b, CL_TRUE, 0, sizeof data, data, 0, NULL, &ev), CL_SUCCESS);
    CHECK_ERR(clRetainContext(ctx), CL_SUCCESS);
    /* The application's two references, then the buffer, the queue and the
     * event: the context lives until the last of them. */
    CHECK_ERR(clReleaseContext(ctx), CL_SUCCESS);
    CHECK(seen.count == 0);
    CHECK_ERR(clReleaseContext(ctx), CL_SUCCESS);
    CHECK(seen.count == 0);
    CHECK_ERR(clReleaseMemObject(b), CL_SUCCESS);
    CHECK(seen.count == 0);
    CHECK_ERR(clFinish(q), CL_SUCCESS);
    CHECK_ERR(clReleaseCommandQueue(q), CL_SUCCESS);
    CHECK(seen.count == 0);
    CHECK_ERR(clReleaseEvent(ev), CL_SUCCESS);
    CHECK(seen.count == 3);
    CHECK(seen.order[0] == 3 && seen.order[1] == 2 && seen.order[2] == 1);
    CHECK(seen.handle[0] == ctx && seen.handle[1] == ctx && seen.handle[2] == ctx);
    /* Gone: the handle is no context any more. */
    CHECK_ERR(clSetContextDestructorCallback(ctx, on_destroy, NULL), CL_INVALID_CONTEXT);
    CHECK(seen.count == 3);
}

static void test_destructor_callback_errors(void) {
    memset(&seen, 0, sizeof seen);
    cl_int err = 1;
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK(ctx != NULL && err == CL_SUCCESS);
    if (!ctx) return;
    CHECK_ERR(clSetContextDestructorCallback(ctx, NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(clSetContextDestructorCallback(ctx, NULL, (void *)1), CL_INVALID_VALUE);
    CHECK_ERR(clSetContextDestructorCallback(NULL, on_destroy, NULL), CL_INVALID_CONTEXT);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, device, NULL, &err);
    CHECK(q != NULL);
    CHECK_ERR(clSetContextDestructorCallback((cl_context)q, on_destroy, NULL), CL_INVALID_CONTEXT);
    if (q) clReleaseCommandQueue(q);
    /* Nothing registered by the failed calls runs. */
    CHECK_ERR(clSetContextDestructorCallback(ctx, on_destroy, (void *)7), CL_SUCCESS);
    CHECK_ERR(clReleaseContext(ctx), CL_SUCCESS);
    CHECK(seen.count == 1 && seen.order[0] == 7);
    /* A context without callbacks is destroyed quietly. */
    cl_context other = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK(other != NULL);
    if (other) CHECK_ERR(clReleaseContext(other), CL_SUCCESS);
    CHECK(seen.count == 1);
}

static void test_supported_image_formats(void) {
    cl_int err = 1;
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK(ctx != NULL && err == CL_SUCCESS);
    if (!ctx) return;
    cl_uint n = 99;
    CHECK_ERR(clGetSupportedImageFormats(ctx, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, 0, NULL, &n), CL_SUCCESS);
    CHECK(n == 42);
    cl_image_format formats[4];
    memset(formats, 0xab, sizeof formats);
    n = 99;
    /* num_entries bounds what is written; the count is all of them. */
    CHECK_ERR(clGetSupportedImageFormats(ctx, CL_MEM_READ_ONLY, CL_MEM_OBJECT_IMAGE3D, 2, formats, &n), CL_SUCCESS);
    CHECK(n == 38);
    CHECK(formats[0].image_channel_order == CL_R && formats[2].image_channel_order == 0xabababab);
    const cl_mem_object_type types[] = {CL_MEM_OBJECT_IMAGE1D, CL_MEM_OBJECT_IMAGE1D_ARRAY, CL_MEM_OBJECT_IMAGE1D_BUFFER,
                                        CL_MEM_OBJECT_IMAGE2D, CL_MEM_OBJECT_IMAGE2D_ARRAY, CL_MEM_OBJECT_IMAGE3D};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        n = 0;
        CHECK_ERR(clGetSupportedImageFormats(ctx, CL_MEM_KERNEL_READ_AND_WRITE | CL_MEM_READ_WRITE, types[i], 0, NULL,
                                             &n),
                  CL_SUCCESS);
        CHECK(n >= 38);
    }
    /* NULL num_image_formats is allowed. */
    CHECK_ERR(clGetSupportedImageFormats(ctx, CL_MEM_WRITE_ONLY, CL_MEM_OBJECT_IMAGE2D, 0, NULL, NULL), CL_SUCCESS);
    /* The argument rules. */
    n = 99;
    CHECK_ERR(clGetSupportedImageFormats(ctx, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, 0, formats, &n),
              CL_INVALID_VALUE);
    CHECK(n == 99);
    CHECK_ERR(clGetSupportedImageFormats(ctx, (cl_mem_flags)1 << 40, CL_MEM_OBJECT_IMAGE2D, 0, NULL, &n),
              CL_INVALID_VALUE);
    CHECK_ERR(clGetSupportedImageFormats(ctx, CL_MEM_READ_WRITE | CL_MEM_READ_ONLY, CL_MEM_OBJECT_IMAGE2D, 0, NULL, &n),
              CL_INVALID_VALUE);
    CHECK_ERR(clGetSupportedImageFormats(ctx, CL_MEM_READ_WRITE, CL_MEM_OBJECT_BUFFER, 0, NULL, &n), CL_INVALID_VALUE);
    CHECK_ERR(clGetSupportedImageFormats(ctx, CL_MEM_READ_WRITE, CL_MEM_OBJECT_PIPE, 0, NULL, &n), CL_INVALID_VALUE);
    CHECK_ERR(clGetSupportedImageFormats(ctx, CL_MEM_READ_WRITE, 0, 0, NULL, &n), CL_INVALID_VALUE);
    CHECK(n == 99);
    CHECK_ERR(clGetSupportedImageFormats(NULL, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, 0, NULL, &n),
              CL_INVALID_CONTEXT);
    CHECK_ERR(clGetSupportedImageFormats((cl_context)device, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, 0, NULL, &n),
              CL_INVALID_CONTEXT);
    CHECK_ERR(clReleaseContext(ctx), CL_SUCCESS);
    CHECK_ERR(clGetSupportedImageFormats(ctx, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, 0, NULL, &n),
              CL_INVALID_CONTEXT);
}

int main(void) {
    setup();
    static const struct test_case tests[] = {
        {"context::destructor_callbacks_run_in_reverse_order_when_the_last_reference_goes",
         test_destructor_callbacks_run_in_reverse_order_when_the_last_reference_goes},
        {"context::destructor_callback_errors", test_destructor_callback_errors},
        {"context::supported_image_formats", test_supported_image_formats},
    };
    int ready = platform && device;
    RUN_TESTS(tests, ready);
    return finish_tests();
}
