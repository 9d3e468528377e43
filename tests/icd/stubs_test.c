/* C tests of the entry points that answer an error rather than work, through
 * the real loader (-lOpenCL, OCL_ICD_VENDORS=<dmabridge.icd>): core entry
 * points not supported: the invalid-handle code only for an invalid handle,
 * CL_INVALID_OPERATION (or the call's own rule) for a valid one.
 * (cl_amd_bus_addressable_memory, which these tests once covered as not
 * built, is amd_test.c's.)
 * Closing line: "N passed, N failed". */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

static cl_platform_id platform;
static cl_device_id device;
static cl_context ctx;
static cl_command_queue queue;

static void setup(void) {
    open_cpu_device(&platform, &device, &ctx, &queue);
    if (!queue) return;
}

/* Core entry points that are not supported: the invalid-handle code for an
   invalid first handle only (NULL, another kind, released), the call's own
   answer for a valid one. */
static void test_unsupported_core_valid_and_invalid_handles(void) {
    cl_int err = 1;
    cl_program p = clCreateProgramWithBuiltInKernels(ctx, 1, &device, "copy_bytes", &err);
    cl_kernel k = clCreateKernel(p, "copy_bytes", &err);
    CHECK(k != NULL);
    /* clCloneKernel (implemented: kernels_test.c) refuses what is not a kernel. */
    err = 1;
    CHECK(clCloneKernel((cl_kernel)p, &err) == NULL && err == CL_INVALID_KERNEL);
    /* clGetKernelSubGroupInfo */
    size_t in = 64, out = 0;
    CHECK_ERR(clGetKernelSubGroupInfo(k, device, CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE, sizeof in, &in, sizeof out,
                                      &out, NULL),
              CL_INVALID_OPERATION);
    CHECK_ERR(clGetKernelSubGroupInfo((cl_kernel)ctx, device, CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE, sizeof in,
                                      &in, sizeof out, &out, NULL),
              CL_INVALID_KERNEL);
    /* clSetProgramSpecializationConstant: no IL programs. */
    cl_uint v = 1;
    CHECK_ERR(clSetProgramSpecializationConstant(p, 0, sizeof v, &v), CL_INVALID_OPERATION);
    CHECK_ERR(clSetProgramSpecializationConstant((cl_program)k, 0, sizeof v, &v), CL_INVALID_PROGRAM);
    /* Timers, sub-devices. */
    cl_ulong t = 0;
    CHECK_ERR(clGetHostTimer(device, &t), CL_INVALID_OPERATION);
    CHECK_ERR(clGetHostTimer((cl_device_id)ctx, &t), CL_INVALID_DEVICE);
    cl_device_partition_property props[] = {CL_DEVICE_PARTITION_EQUALLY, 1, 0};
    cl_device_id sub[4];
    cl_uint nsub = 0;
    CHECK_ERR(clCreateSubDevices(device, props, 4, sub, &nsub), CL_INVALID_VALUE);
    CHECK_ERR(clCreateSubDevices((cl_device_id)queue, props, 4, sub, &nsub), CL_INVALID_DEVICE);
    /* (Images and samplers are implemented: images_test.c.) */
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64, NULL, &err);
    /* clSetContextDestructorCallback */
    CHECK_ERR(clSetContextDestructorCallback((cl_context)queue, NULL, NULL), CL_INVALID_CONTEXT);
    clReleaseMemObject(buf);
    clReleaseKernel(k);
    clReleaseProgram(p);
}

/* No program binary format: CL_INVALID_BINARY after the argument rules. */
static void test_program_with_binary(void) {
    const unsigned char bin[] = {0x7f, 'E', 'L', 'F'};
    const unsigned char *bins[1] = {bin};
    size_t len[1] = {sizeof bin};
    cl_int status[1] = {42}, err = 1;
    CHECK(clCreateProgramWithBinary(ctx, 1, &device, len, bins, status, &err) == NULL);
    CHECK(err == CL_INVALID_BINARY && status[0] == CL_INVALID_BINARY);
    CHECK(clCreateProgramWithBinary(ctx, 1, &device, len, bins, NULL, &err) == NULL && err == CL_INVALID_BINARY);
    CHECK(clCreateProgramWithBinary(ctx, 1, &device, NULL, bins, NULL, &err) == NULL && err == CL_INVALID_VALUE);
    CHECK(clCreateProgramWithBinary(ctx, 1, &device, len, NULL, NULL, &err) == NULL && err == CL_INVALID_VALUE);
    size_t zero[1] = {0};
    CHECK(clCreateProgramWithBinary(ctx, 1, &device, zero, bins, NULL, &err) == NULL && err == CL_INVALID_VALUE);
    const unsigned char *nobin[1] = {NULL};
    CHECK(clCreateProgramWithBinary(ctx, 1, &device, len, nobin, NULL, &err) == NULL && err == CL_INVALID_VALUE);
    CHECK(clCreateProgramWithBinary(ctx, 0, NULL, len, bins, NULL, &err) == NULL && err == CL_INVALID_VALUE);
    cl_device_id notdev = (cl_device_id)ctx;
    CHECK(clCreateProgramWithBinary(ctx, 1, &notdev, len, bins, NULL, &err) == NULL && err == CL_INVALID_DEVICE);
    CHECK(clCreateProgramWithBinary((cl_context)queue, 1, &device, len, bins, NULL, &err) == NULL &&
          err == CL_INVALID_CONTEXT);
}

int main(void) {
    setup();
    static const struct test_case tests[] = {
        {"unsupported_core_valid_and_invalid_handles", test_unsupported_core_valid_and_invalid_handles},
        {"program_with_binary", test_program_with_binary},
    };
    int ready = platform && device && ctx && queue;
    RUN_TESTS(tests, ready);
    close_cpu_device(ctx, queue);
    return finish_tests();
}
