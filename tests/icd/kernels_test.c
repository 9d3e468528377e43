/* C tests of the dmabridge ICD's programs and kernels, through the real
 * loader (-lOpenCL, OCL_ICD_VENDORS=<dmabridge.icd>), on the host's CPU
 * device: built-in programs, programs from source (no compiler), kernels and
 * their arguments (scalars, USM and SVM pointers, buffers), execution info, NDRange
 * and task launches, native kernels over buffers, and their error codes.
 * Closing line: "N passed, N failed". */
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
static cl_context ctx;
static cl_command_queue queue;
static clHostMemAllocINTEL_fn host_alloc;
static clMemFreeINTEL_fn mem_free;
static clSetKernelArgMemPointerINTEL_fn set_arg_ptr;

static void setup(void) {
    open_cpu_device(&platform, &device, &ctx, &queue);
    if (!queue) return;
    host_alloc = EXT_FN(platform, clHostMemAllocINTEL);
    mem_free = EXT_FN(platform, clMemFreeINTEL);
    set_arg_ptr = EXT_FN(platform, clSetKernelArgMemPointerINTEL);
    if (!host_alloc || !mem_free || !set_arg_ptr) queue = NULL;
}

static int build_calls;
static void CL_CALLBACK on_build(cl_program p, void *data) {
    cl_build_status st = 99;
    clGetProgramBuildInfo(p, device, CL_PROGRAM_BUILD_STATUS, sizeof st, &st, NULL);
    build_calls += (st == CL_BUILD_SUCCESS) * *(int *)data;
}

static void test_builtin_program(void) {
    cl_int err = 1;
    char names[512] = {0};
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_BUILT_IN_KERNELS, sizeof names, names, NULL), CL_SUCCESS);
    CHECK(strstr(names, "fill_pattern_u32") != NULL && strstr(names, "copy_bytes") != NULL);
    cl_program p = clCreateProgramWithBuiltInKernels(ctx, 1, &device, "fill_pattern_u32; copy_bytes", &err);
    CHECK(p != NULL && err == CL_SUCCESS);
    cl_uint nd = 0, refs = 0;
    CHECK_ERR(clGetProgramInfo(p, CL_PROGRAM_NUM_DEVICES, sizeof nd, &nd, NULL), CL_SUCCESS);
    CHECK(nd == 1);
    cl_device_id d = NULL;
    CHECK_ERR(clGetProgramInfo(p, CL_PROGRAM_DEVICES, sizeof d, &d, NULL), CL_SUCCESS);
    CHECK(d == device);
    cl_context c = NULL;
    CHECK_ERR(clGetProgramInfo(p, CL_PROGRAM_CONTEXT, sizeof c, &c, NULL), CL_SUCCESS);
    CHECK(c == ctx);
    CHECK_ERR(clGetProgramInfo(p, CL_PROGRAM_REFERENCE_COUNT, sizeof refs, &refs, NULL), CL_SUCCESS);
    CHECK(refs == 1);
    size_t nk = 0, size = 0;
    CHECK_ERR(clGetProgramInfo(p, CL_PROGRAM_NUM_KERNELS, sizeof nk, &nk, NULL), CL_SUCCESS);
    CHECK(nk == 2);
    char kn[128] = {0};
    CHECK_ERR(clGetProgramInfo(p, CL_PROGRAM_KERNEL_NAMES, sizeof kn, kn, &size), CL_SUCCESS);
    CHECK(strcmp(kn, "fill_pattern_u32;copy_bytes") == 0 && size == strlen(kn) + 1);
    size_t bsize = 99;
    CHECK_ERR(clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof bsize, &bsize, NULL), CL_SUCCESS);
    CHECK(bsize == 0);
    unsigned char *bins[1] = {(unsigned char *)kn};
    CHECK_ERR(clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bins, bins, &size), CL_SUCCESS);
    CHECK(size == sizeof bins && bins[0] == (unsigned char *)kn);
    CHECK_ERR(clGetProgramInfo(p, CL_PROGRAM_NUM_KERNELS, 2, &nk, NULL), CL_INVALID_VALUE);
    CHECK_ERR(clGetProgramInfo(p, 0x7fff, sizeof nk, &nk, NULL), CL_INVALID_VALUE);
    cl_build_status st = 99;
    CHECK_ERR(clGetProgramBuildInfo(p, device, CL_PROGRAM_BUILD_STATUS, sizeof st, &st, NULL), CL_SUCCESS);
    CHECK(st == CL_BUILD_SUCCESS);
    cl_program_binary_type bt = 99;
    CHECK_ERR(clGetProgramBuildInfo(p, device, CL_PROGRAM_BINARY_TYPE, sizeof bt, &bt, NULL), CL_SUCCESS);
    CHECK(bt == CL_PROGRAM_BINARY_TYPE_EXECUTABLE);
    CHECK_ERR(clGetProgramBuildInfo(p, NULL, CL_PROGRAM_BUILD_STATUS, sizeof st, &st, NULL), CL_INVALID_DEVICE);
    /* Building a built-in program succeeds, and calls the callback. */
    static int one = 1;
    CHECK_ERR(clBuildProgram(p, 0, NULL, "-cl-std=CL3.0", on_build, &one), CL_SUCCESS);
    CHECK(build_calls == 1);
    char opts[64] = {0};
    CHECK_ERR(clGetProgramBuildInfo(p, device, CL_PROGRAM_BUILD_OPTIONS, sizeof opts, opts, NULL), CL_SUCCESS);
    CHECK(strcmp(opts, "-cl-std=CL3.0") == 0);
    CHECK_ERR(clCompileProgram(p, 1, &device, NULL, 0, NULL, NULL, NULL, NULL), CL_SUCCESS);
    CHECK_ERR(clBuildProgram(p, 1, NULL, NULL, NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(clBuildProgram(p, 0, NULL, NULL, NULL, &one), CL_INVALID_VALUE);
    /* Linking built-in programs gives a built-in program. */
    cl_program q = clCreateProgramWithBuiltInKernels(ctx, 1, &device, "checksum_adler32", &err);
    cl_program in[2] = {p, q};
    cl_program linked = clLinkProgram(ctx, 0, NULL, NULL, 2, in, NULL, NULL, &err);
    CHECK(linked != NULL && err == CL_SUCCESS);
    CHECK_ERR(clGetProgramInfo(linked, CL_PROGRAM_NUM_KERNELS, sizeof nk, &nk, NULL), CL_SUCCESS);
    CHECK(nk == 3);
    clReleaseProgram(linked);
    clReleaseProgram(q);
    /* Creation errors. */
    CHECK(clCreateProgramWithBuiltInKernels(ctx, 1, &device, "no_such_kernel", &err) == NULL &&
          err == CL_INVALID_VALUE);
    CHECK(clCreateProgramWithBuiltInKernels(ctx, 1, &device, "copy_bytes;", &err) == NULL && err == CL_INVALID_VALUE);
    CHECK(clCreateProgramWithBuiltInKernels(ctx, 1, &device, NULL, &err) == NULL && err == CL_INVALID_VALUE);
    CHECK(clCreateProgramWithBuiltInKernels(ctx, 0, NULL, "copy_bytes", &err) == NULL && err == CL_INVALID_VALUE);
    cl_device_id notdev = (cl_device_id)queue;
    CHECK(clCreateProgramWithBuiltInKernels(ctx, 1, &notdev, "copy_bytes", &err) == NULL && err == CL_INVALID_DEVICE);
    CHECK(clCreateProgramWithBuiltInKernels(NULL, 1, &device, "copy_bytes", &err) == NULL &&
          err == CL_INVALID_CONTEXT);
    /* Reference counts and released handles. */
    CHECK_ERR(clRetainProgram(p), CL_SUCCESS);
    CHECK_ERR(clReleaseProgram(p), CL_SUCCESS);
    CHECK_ERR(clReleaseProgram(p), CL_SUCCESS);
    CHECK_ERR(clReleaseProgram(p), CL_INVALID_PROGRAM);
    CHECK_ERR(clGetProgramInfo(p, CL_PROGRAM_NUM_KERNELS, sizeof nk, &nk, NULL), CL_INVALID_PROGRAM);
    CHECK_ERR(clRetainProgram((cl_program)ctx), CL_INVALID_PROGRAM);
    CHECK_ERR(clRetainProgram(NULL), CL_INVALID_PROGRAM);
}

static void test_source_program(void) {
    cl_int err = 1;
    const char *src[2] = {"kernel void k(global int *p) ", "{ p[0] = 1; }XXX"};
    size_t lens[2] = {0, strlen(src[1]) - 3};
    cl_program p = clCreateProgramWithSource(ctx, 2, src, lens, &err);
    CHECK(p != NULL && err == CL_SUCCESS);
    char text[128] = {0};
    CHECK_ERR(clGetProgramInfo(p, CL_PROGRAM_SOURCE, sizeof text, text, NULL), CL_SUCCESS);
    CHECK(strcmp(text, "kernel void k(global int *p) { p[0] = 1; }") == 0);
    CHECK_ERR(clBuildProgram(p, 0, NULL, NULL, NULL, NULL), CL_COMPILER_NOT_AVAILABLE);
    CHECK_ERR(clCompileProgram(p, 0, NULL, NULL, 0, NULL, NULL, NULL, NULL), CL_COMPILER_NOT_AVAILABLE);
    cl_build_status st = 99;
    CHECK_ERR(clGetProgramBuildInfo(p, device, CL_PROGRAM_BUILD_STATUS, sizeof st, &st, NULL), CL_SUCCESS);
    CHECK(st == CL_BUILD_ERROR);
    size_t log_size = 0;
    CHECK_ERR(clGetProgramBuildInfo(p, device, CL_PROGRAM_BUILD_LOG, 0, NULL, &log_size), CL_SUCCESS);
    CHECK(log_size > 1);
    size_t nk = 0;
    CHECK_ERR(clGetProgramInfo(p, CL_PROGRAM_NUM_KERNELS, sizeof nk, &nk, NULL), CL_INVALID_PROGRAM_EXECUTABLE);
    CHECK(clCreateKernel(p, "k", &err) == NULL && err == CL_INVALID_PROGRAM_EXECUTABLE);
    cl_program linked = clLinkProgram(ctx, 0, NULL, NULL, 1, &p, NULL, NULL, &err);
    CHECK(linked == NULL && err == CL_LINKER_NOT_AVAILABLE);
    CHECK_ERR(clReleaseProgram(p), CL_SUCCESS);
    /* Creation errors. */
    CHECK(clCreateProgramWithSource(ctx, 0, src, NULL, &err) == NULL && err == CL_INVALID_VALUE);
    CHECK(clCreateProgramWithSource(ctx, 1, NULL, NULL, &err) == NULL && err == CL_INVALID_VALUE);
    size_t huge_len[1] = {SIZE_MAX - 1};
    CHECK(clCreateProgramWithSource(ctx, 1, src, huge_len, &err) == NULL && err == CL_INVALID_VALUE);
    const char *with_null[2] = {"x", NULL};
    CHECK(clCreateProgramWithSource(ctx, 2, with_null, NULL, &err) == NULL && err == CL_INVALID_VALUE);
    CHECK(clCreateProgramWithSource((cl_context)queue, 1, src, NULL, &err) == NULL && err == CL_INVALID_CONTEXT);
}

/* Without a compiler (tests/icd/run runs this file with DMABRIDGE_POCL=off)
 * the device claims no OpenCL C beyond 1.0: none of the extensions OpenCL
 * 3.0 requires of OpenCL C 1.1, no doubles, no OpenCL C features (PoCL's,
 * when it is there: pocl_programs_test.c). */
static void test_no_compiler_no_language(void) {
    cl_bool comp = 1;
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_COMPILER_AVAILABLE, sizeof comp, &comp, NULL), CL_SUCCESS);
    CHECK(comp == CL_FALSE);
    char ver[64] = {0}, ext[8192] = {0};
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_OPENCL_C_VERSION, sizeof ver, ver, NULL), CL_SUCCESS);
    CHECK(strncmp(ver, "OpenCL C 1.0", 12) == 0);
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, sizeof ext, ext, NULL), CL_SUCCESS);
    CHECK(has_word(ext, "cl_intel_unified_shared_memory"));
    CHECK(!has_word(ext, "cl_khr_global_int32_base_atomics") && !has_word(ext, "cl_khr_byte_addressable_store"));
    CHECK(!has_word(ext, "cl_khr_fp64") && !has_word(ext, "cl_khr_int64_base_atomics"));
    size_t size = 1;
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_OPENCL_C_FEATURES, 0, NULL, &size), CL_SUCCESS);
    CHECK(size == 0);
    cl_device_fp_config fp = 1;
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp, &fp, NULL), CL_SUCCESS);
    CHECK(fp == 0);
}

static void test_kernel_objects(void) {
    cl_int err = 1;
    cl_program p = clCreateProgramWithBuiltInKernels(ctx, 1, &device, "fill_pattern_u32;copy_bytes", &err);
    cl_kernel k = clCreateKernel(p, "fill_pattern_u32", &err);
    CHECK(k != NULL && err == CL_SUCCESS);
    char name[64] = {0};
    CHECK_ERR(clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof name, name, NULL), CL_SUCCESS);
    CHECK(strcmp(name, "fill_pattern_u32") == 0);
    cl_uint nargs = 0, refs = 0;
    CHECK_ERR(clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, NULL), CL_SUCCESS);
    CHECK(nargs == 3);
    CHECK_ERR(clGetKernelInfo(k, CL_KERNEL_REFERENCE_COUNT, sizeof refs, &refs, NULL), CL_SUCCESS);
    CHECK(refs == 1);
    cl_program kp = NULL;
    cl_context kc = NULL;
    CHECK_ERR(clGetKernelInfo(k, CL_KERNEL_PROGRAM, sizeof kp, &kp, NULL), CL_SUCCESS);
    CHECK_ERR(clGetKernelInfo(k, CL_KERNEL_CONTEXT, sizeof kc, &kc, NULL), CL_SUCCESS);
    CHECK(kp == p && kc == ctx);
    CHECK_ERR(clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, 1, &nargs, NULL), CL_INVALID_VALUE);
    size_t wg = 0, cwg[3] = {9, 9, 9}, gws[3] = {0};
    CHECK_ERR(clGetKernelWorkGroupInfo(k, NULL, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL), CL_SUCCESS);
    CHECK(wg >= 1);
    CHECK_ERR(clGetKernelWorkGroupInfo(k, device, CL_KERNEL_COMPILE_WORK_GROUP_SIZE, sizeof cwg, cwg, NULL),
              CL_SUCCESS);
    CHECK(cwg[0] == 0 && cwg[1] == 0 && cwg[2] == 0);
    CHECK_ERR(clGetKernelWorkGroupInfo(k, device, CL_KERNEL_GLOBAL_WORK_SIZE, sizeof gws, gws, NULL), CL_SUCCESS);
    CHECK(gws[0] > 0);
    cl_device_id notdev = (cl_device_id)ctx;
    CHECK_ERR(clGetKernelWorkGroupInfo(k, notdev, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL), CL_INVALID_DEVICE);
    char arg_name[16];
    CHECK_ERR(clGetKernelArgInfo(k, 0, CL_KERNEL_ARG_NAME, sizeof arg_name, arg_name, NULL),
              CL_KERNEL_ARG_INFO_NOT_AVAILABLE);
    CHECK_ERR(clGetKernelArgInfo(k, 3, CL_KERNEL_ARG_NAME, sizeof arg_name, arg_name, NULL), CL_INVALID_ARG_INDEX);
    /* A program with kernels attached cannot be built again. */
    CHECK_ERR(clBuildProgram(p, 0, NULL, NULL, NULL, NULL), CL_INVALID_OPERATION);
    /* All kernels of the program. */
    cl_uint n = 0;
    CHECK_ERR(clCreateKernelsInProgram(p, 0, NULL, &n), CL_SUCCESS);
    CHECK(n == 2);
    cl_kernel ks[2] = {NULL, NULL};
    CHECK_ERR(clCreateKernelsInProgram(p, 1, ks, NULL), CL_INVALID_VALUE);
    CHECK_ERR(clCreateKernelsInProgram(p, 2, ks, &n), CL_SUCCESS);
    CHECK(ks[0] != NULL && ks[1] != NULL);
    CHECK_ERR(clGetKernelInfo(ks[1], CL_KERNEL_FUNCTION_NAME, sizeof name, name, NULL), CL_SUCCESS);
    CHECK(strcmp(name, "copy_bytes") == 0);
    clReleaseKernel(ks[0]);
    clReleaseKernel(ks[1]);
    /* Errors. */
    CHECK(clCreateKernel(p, "checksum_adler32", &err) == NULL && err == CL_INVALID_KERNEL_NAME);
    CHECK(clCreateKernel(p, NULL, &err) == NULL && err == CL_INVALID_VALUE);
    CHECK(clCreateKernel(NULL, "copy_bytes", &err) == NULL && err == CL_INVALID_PROGRAM);
    /* The kernel keeps its program: released by the application, it is
       still the kernel's program. */
    CHECK_ERR(clReleaseProgram(p), CL_SUCCESS);
    CHECK_ERR(clGetKernelInfo(k, CL_KERNEL_PROGRAM, sizeof kp, &kp, NULL), CL_SUCCESS);
    CHECK(kp == p);
    CHECK_ERR(clRetainKernel(k), CL_SUCCESS);
    CHECK_ERR(clReleaseKernel(k), CL_SUCCESS);
    CHECK_ERR(clReleaseKernel(k), CL_SUCCESS);
    CHECK_ERR(clReleaseKernel(k), CL_INVALID_KERNEL);
    CHECK_ERR(clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, NULL), CL_INVALID_KERNEL);
    CHECK_ERR(clRetainKernel((cl_kernel)queue), CL_INVALID_KERNEL);
    CHECK_ERR(clSetKernelArg(NULL, 0, 4, &nargs), CL_INVALID_KERNEL);
}

static void test_args_and_launch(void) {
    cl_int err = 1;
    cl_program p = clCreateProgramWithBuiltInKernels(ctx, 1, &device, "fill_pattern_u32;copy_bytes", &err);
    cl_kernel fill = clCreateKernel(p, "fill_pattern_u32", &err);
    cl_kernel copy = clCreateKernel(p, "copy_bytes", &err);
    enum { N = 4096 };
    uint32_t *usm = host_alloc(ctx, NULL, N * 4, 0, &err);
    CHECK(usm != NULL && err == CL_SUCCESS);
    if (!usm) return;
    cl_ulong count = N;
    cl_uint pattern = 0x5eed5eedu;
    /* Launch before the arguments are set. */
    CHECK_ERR(clEnqueueTask(queue, fill, 0, NULL, NULL), CL_INVALID_KERNEL_ARGS);
    CHECK_ERR(set_arg_ptr(fill, 0, usm), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(fill, 1, sizeof count, &count), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(fill, 2, sizeof pattern, &pattern), CL_SUCCESS);
    size_t global = 64, local = 16;
    cl_event ev = NULL;
    CHECK_ERR(clEnqueueNDRangeKernel(queue, fill, 1, NULL, &global, &local, 0, NULL, &ev), CL_SUCCESS);
    CHECK_ERR(clWaitForEvents(1, &ev), CL_SUCCESS);
    cl_command_type ct = 0;
    CHECK_ERR(clGetEventInfo(ev, CL_EVENT_COMMAND_TYPE, sizeof ct, &ct, NULL), CL_SUCCESS);
    CHECK(ct == CL_COMMAND_NDRANGE_KERNEL);
    clReleaseEvent(ev);
    int ok = 1;
    for (int i = 0; i < N; i++) ok &= usm[i] == pattern;
    CHECK(ok);
    /* 2-D and 3-D ranges (CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS is 3, three
     * size_t of CL_DEVICE_MAX_WORK_ITEM_SIZES): the built-in does the same
     * work whatever the range's shape, offset and local size; a local size
     * need not divide the global size (non-uniform work-groups). */
    cl_uint dims = 0;
    size_t sizes[3] = {0}, sizes_ret = 0;
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, sizeof dims, &dims, NULL), CL_SUCCESS);
    CHECK(dims == 3);
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof sizes, sizes, &sizes_ret), CL_SUCCESS);
    CHECK(sizes_ret == 3 * sizeof(size_t) && sizes[0] >= 1 && sizes[1] >= 1 && sizes[2] >= 1);
    size_t g2d[2] = {16, 4}, l2d[2] = {5, 3}, o2d[2] = {1, 2};
    size_t g3d[3] = {4, 4, 4}, l3d[3] = {2, 2, 2};
    for (int shape = 2; shape <= 3; shape++) {
        memset(usm, 0, N * 4);
        cl_uint next = pattern + shape;
        CHECK_ERR(clSetKernelArg(fill, 2, sizeof next, &next), CL_SUCCESS);
        if (shape == 2)
            CHECK_ERR(clEnqueueNDRangeKernel(queue, fill, 2, o2d, g2d, l2d, 0, NULL, NULL), CL_SUCCESS);
        else
            CHECK_ERR(clEnqueueNDRangeKernel(queue, fill, 3, NULL, g3d, l3d, 0, NULL, NULL), CL_SUCCESS);
        CHECK_ERR(clFinish(queue), CL_SUCCESS);
        ok = 1;
        for (int i = 0; i < N; i++) ok &= usm[i] == next;
        CHECK(ok);
    }
    CHECK_ERR(clSetKernelArg(fill, 2, sizeof pattern, &pattern), CL_SUCCESS);
    /* As a task, with a new pattern (arguments are captured at enqueue). */
    cl_uint pattern2 = 7;
    CHECK_ERR(clSetKernelArg(fill, 2, sizeof pattern2, &pattern2), CL_SUCCESS);
    CHECK_ERR(clEnqueueTask(queue, fill, 0, NULL, &ev), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(fill, 2, sizeof pattern, &pattern), CL_SUCCESS);
    CHECK_ERR(clWaitForEvents(1, &ev), CL_SUCCESS);
    CHECK_ERR(clGetEventInfo(ev, CL_EVENT_COMMAND_TYPE, sizeof ct, &ct, NULL), CL_SUCCESS);
    CHECK(ct == CL_COMMAND_TASK);
    clReleaseEvent(ev);
    CHECK(usm[0] == 7 && usm[N - 1] == 7);
    /* A clone keeps the arguments set so far; changing them on either
       kernel afterwards leaves the other as it was. */
    cl_kernel twin = clCloneKernel(fill, &err);
    CHECK(twin != NULL && err == CL_SUCCESS);
    if (twin) {
        cl_uint refs = 0, args = 0;
        CHECK_ERR(clGetKernelInfo(twin, CL_KERNEL_REFERENCE_COUNT, sizeof refs, &refs, NULL), CL_SUCCESS);
        CHECK_ERR(clGetKernelInfo(twin, CL_KERNEL_NUM_ARGS, sizeof args, &args, NULL), CL_SUCCESS);
        CHECK(refs == 1 && args == 3);
        cl_uint pattern3 = 9;
        CHECK_ERR(clSetKernelArg(fill, 2, sizeof pattern3, &pattern3), CL_SUCCESS);
        CHECK_ERR(clEnqueueTask(queue, twin, 0, NULL, NULL), CL_SUCCESS);
        CHECK_ERR(clFinish(queue), CL_SUCCESS);
        CHECK(usm[0] == pattern && usm[N - 1] == pattern); /* the clone's pattern, set before cloning */
        CHECK_ERR(clSetKernelArg(twin, 2, sizeof pattern2, &pattern2), CL_SUCCESS);
        CHECK_ERR(clEnqueueTask(queue, fill, 0, NULL, NULL), CL_SUCCESS);
        CHECK_ERR(clFinish(queue), CL_SUCCESS);
        CHECK(usm[0] == pattern3 && usm[N - 1] == pattern3);
        CHECK_ERR(clReleaseKernel(twin), CL_SUCCESS);
    }
    /* Back to the 7s the copy below expects. */
    CHECK_ERR(clSetKernelArg(fill, 2, sizeof pattern2, &pattern2), CL_SUCCESS);
    CHECK_ERR(clEnqueueTask(queue, fill, 0, NULL, NULL), CL_SUCCESS);
    CHECK_ERR(clFinish(queue), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(fill, 2, sizeof pattern, &pattern), CL_SUCCESS);
    /* copy_bytes from the USM allocation into an SVM allocation. */
    uint32_t *svm = clSVMAlloc(ctx, CL_MEM_READ_WRITE, N * 4, 0);
    CHECK(svm != NULL);
    if (svm) {
        cl_ulong bytes = N * 4;
        CHECK_ERR(clSetKernelArgSVMPointer(copy, 0, svm), CL_SUCCESS);
        CHECK_ERR(set_arg_ptr(copy, 1, usm), CL_SUCCESS);
        CHECK_ERR(clSetKernelArg(copy, 2, sizeof bytes, &bytes), CL_SUCCESS);
        CHECK_ERR(clEnqueueNDRangeKernel(queue, copy, 1, NULL, &global, NULL, 0, NULL, NULL), CL_SUCCESS);
        CHECK_ERR(clFinish(queue), CL_SUCCESS);
        CHECK(svm[0] == 7 && svm[N - 1] == 7);
        clSVMFree(ctx, svm);
    }
    /* Argument errors. */
    CHECK_ERR(clSetKernelArg(fill, 1, 4, &pattern), CL_INVALID_ARG_SIZE);
    /* A size near SIZE_MAX is the wrong size, refused before any read (it
       aborted the process: found by fuzz_test). */
    CHECK_ERR(clSetKernelArg(fill, 1, SIZE_MAX - 7, &count), CL_INVALID_ARG_SIZE);
    CHECK_ERR(clSetKernelArg(fill, 3, 4, &pattern), CL_INVALID_ARG_INDEX);
    CHECK_ERR(clSetKernelArg(fill, 2, 4, NULL), CL_INVALID_ARG_VALUE);
    CHECK_ERR(set_arg_ptr(fill, 2, usm), CL_INVALID_ARG_VALUE);
    CHECK_ERR(set_arg_ptr(fill, 5, usm), CL_INVALID_ARG_INDEX);
    CHECK_ERR(set_arg_ptr(NULL, 0, usm), CL_INVALID_KERNEL);
    CHECK_ERR(clSetKernelArgSVMPointer((cl_kernel)ctx, 0, usm), CL_INVALID_KERNEL);
    cl_mem buf = clCreateBuffer(ctx, 0, N * 4, NULL, &err);
    /* A buffer object is a pointer argument (test_buffer_args launches it). */
    CHECK_ERR(clSetKernelArg(fill, 0, sizeof buf, &buf), CL_SUCCESS);
    cl_mem notmem = (cl_mem)queue;
    CHECK_ERR(clSetKernelArg(fill, 0, sizeof notmem, &notmem), CL_INVALID_MEM_OBJECT);
    CHECK_ERR(clSetKernelArg(fill, 0, 4, &buf), CL_INVALID_ARG_SIZE);
    clReleaseMemObject(buf);
    /* A NULL buffer is a NULL pointer, refused at launch by the built-in. */
    CHECK_ERR(clSetKernelArg(fill, 0, sizeof(cl_mem), NULL), CL_SUCCESS);
    CHECK_ERR(clEnqueueTask(queue, fill, 0, NULL, NULL), CL_INVALID_KERNEL_ARGS);
    /* A range past the end of the allocation. */
    cl_ulong too_many = N + 1;
    CHECK_ERR(set_arg_ptr(fill, 0, usm), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(fill, 1, sizeof too_many, &too_many), CL_SUCCESS);
    CHECK_ERR(clEnqueueTask(queue, fill, 0, NULL, NULL), CL_INVALID_KERNEL_ARGS);
    CHECK_ERR(clSetKernelArg(fill, 1, sizeof count, &count), CL_SUCCESS);
    /* NDRange errors. */
    size_t zero_local = 0, huge_local = 1 << 20;
    size_t four[4] = {4, 4, 2, 2};
    CHECK_ERR(clEnqueueNDRangeKernel(queue, fill, 0, NULL, &global, NULL, 0, NULL, NULL), CL_INVALID_WORK_DIMENSION);
    CHECK_ERR(clEnqueueNDRangeKernel(queue, fill, 4, NULL, four, NULL, 0, NULL, NULL), CL_INVALID_WORK_DIMENSION);
    CHECK_ERR(clEnqueueNDRangeKernel(queue, fill, 1, NULL, NULL, NULL, 0, NULL, NULL), CL_INVALID_GLOBAL_WORK_SIZE);
    size_t overflow[2] = {SIZE_MAX, 2};
    CHECK_ERR(clEnqueueNDRangeKernel(queue, fill, 2, NULL, overflow, NULL, 0, NULL, NULL),
              CL_INVALID_GLOBAL_WORK_SIZE);
    CHECK_ERR(clEnqueueNDRangeKernel(queue, fill, 1, NULL, &global, &zero_local, 0, NULL, NULL),
              CL_INVALID_WORK_GROUP_SIZE);
    CHECK_ERR(clEnqueueNDRangeKernel(queue, fill, 1, NULL, &global, &huge_local, 0, NULL, NULL),
              CL_INVALID_WORK_ITEM_SIZE);
    size_t g3[3] = {64, 64, 4}, group_too_big[3] = {32, 32, 2}, item_too_big[3] = {1, 2048, 1};
    CHECK_ERR(clEnqueueNDRangeKernel(queue, fill, 3, NULL, g3, group_too_big, 0, NULL, NULL),
              CL_INVALID_WORK_GROUP_SIZE);
    CHECK_ERR(clEnqueueNDRangeKernel(queue, fill, 3, NULL, g3, item_too_big, 0, NULL, NULL),
              CL_INVALID_WORK_ITEM_SIZE);
    size_t big_offset = SIZE_MAX, offsets2[2] = {0, SIZE_MAX}, g2[2] = {8, 8};
    CHECK_ERR(clEnqueueNDRangeKernel(queue, fill, 1, &big_offset, &global, NULL, 0, NULL, NULL),
              CL_INVALID_GLOBAL_OFFSET);
    CHECK_ERR(clEnqueueNDRangeKernel(queue, fill, 2, offsets2, g2, NULL, 0, NULL, NULL), CL_INVALID_GLOBAL_OFFSET);
    CHECK_ERR(clEnqueueNDRangeKernel(queue, (cl_kernel)ctx, 1, NULL, &global, NULL, 0, NULL, NULL), CL_INVALID_KERNEL);
    CHECK_ERR(clEnqueueNDRangeKernel(queue, fill, 1, NULL, &global, NULL, 1, NULL, NULL), CL_INVALID_EVENT_WAIT_LIST);
    cl_context other = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    cl_command_queue oq = clCreateCommandQueueWithProperties(other, device, NULL, &err);
    CHECK_ERR(clEnqueueNDRangeKernel(oq, fill, 1, NULL, &global, NULL, 0, NULL, NULL), CL_INVALID_CONTEXT);
    CHECK_ERR(clEnqueueTask(oq, fill, 0, NULL, NULL), CL_INVALID_CONTEXT);
    clReleaseCommandQueue(oq);
    clReleaseContext(other);
    /* Execution info. */
    void *ptrs[1] = {usm};
    cl_bool yes = CL_TRUE;
    CHECK_ERR(clSetKernelExecInfo(fill, CL_KERNEL_EXEC_INFO_USM_PTRS_INTEL, sizeof ptrs, ptrs), CL_SUCCESS);
    CHECK_ERR(clSetKernelExecInfo(fill, CL_KERNEL_EXEC_INFO_SVM_PTRS, sizeof ptrs, ptrs), CL_SUCCESS);
    CHECK_ERR(clSetKernelExecInfo(fill, CL_KERNEL_EXEC_INFO_INDIRECT_HOST_ACCESS_INTEL, sizeof yes, &yes), CL_SUCCESS);
    CHECK_ERR(clSetKernelExecInfo(fill, CL_KERNEL_EXEC_INFO_SVM_FINE_GRAIN_SYSTEM, sizeof yes, &yes), CL_SUCCESS);
    CHECK_ERR(clSetKernelExecInfo(fill, CL_KERNEL_EXEC_INFO_INDIRECT_HOST_ACCESS_INTEL, 3, &yes), CL_INVALID_VALUE);
    CHECK_ERR(clSetKernelExecInfo(fill, CL_KERNEL_EXEC_INFO_USM_PTRS_INTEL, 3, ptrs), CL_INVALID_VALUE);
    CHECK_ERR(clSetKernelExecInfo(fill, CL_KERNEL_EXEC_INFO_USM_PTRS_INTEL, SIZE_MAX - 7, ptrs), CL_INVALID_VALUE);
    CHECK_ERR(clSetKernelExecInfo(fill, CL_KERNEL_EXEC_INFO_SVM_PTRS, sizeof ptrs, NULL), CL_INVALID_VALUE);
    CHECK_ERR(clSetKernelExecInfo(fill, 0x7777, sizeof yes, &yes), CL_INVALID_VALUE);
    CHECK_ERR(clSetKernelExecInfo(NULL, CL_KERNEL_EXEC_INFO_SVM_PTRS, sizeof ptrs, ptrs), CL_INVALID_KERNEL);
    /* With indirect access the launch still runs. */
    CHECK_ERR(clEnqueueNDRangeKernel(queue, fill, 1, NULL, &global, NULL, 0, NULL, NULL), CL_SUCCESS);
    CHECK_ERR(clFinish(queue), CL_SUCCESS);
    CHECK(usm[0] == pattern && usm[N - 1] == pattern);
    CHECK_ERR(mem_free(ctx, usm), CL_SUCCESS);
    clReleaseKernel(fill);
    clReleaseKernel(copy);
    clReleaseProgram(p);
}

/* Buffer objects as pointer arguments: fill_pattern_u32 into a buffer,
 * copy_bytes buffer -> sub-buffer, each shown by clEnqueueReadBuffer; a
 * released handle and a buffer of another context are not memory objects
 * of the kernel. */
static void test_buffer_args(void) {
    enum { N = 1024 };
    cl_int err;
    cl_program p = clCreateProgramWithBuiltInKernels(ctx, 1, &device, "fill_pattern_u32;copy_bytes", &err);
    CHECK_ERR(err, CL_SUCCESS);
    cl_kernel fill = clCreateKernel(p, "fill_pattern_u32", &err);
    cl_kernel copy = clCreateKernel(p, "copy_bytes", &err);
    CHECK_ERR(err, CL_SUCCESS);
    cl_mem src = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * 4, NULL, &err);
    CHECK_ERR(err, CL_SUCCESS);
    cl_mem dst = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 2 * N * 4, NULL, &err);
    CHECK_ERR(err, CL_SUCCESS);
    static uint32_t zero[2 * N], back[2 * N];
    CHECK_ERR(clEnqueueWriteBuffer(queue, dst, CL_TRUE, 0, sizeof zero, zero, 0, NULL, NULL), CL_SUCCESS);
    cl_ulong count = N;
    cl_uint pattern = 0xA1B2C3D4u;
    size_t global = 16;
    CHECK_ERR(clSetKernelArg(fill, 0, sizeof src, &src), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(fill, 1, sizeof count, &count), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(fill, 2, sizeof pattern, &pattern), CL_SUCCESS);
    CHECK_ERR(clEnqueueNDRangeKernel(queue, fill, 1, NULL, &global, NULL, 0, NULL, NULL), CL_SUCCESS);
    CHECK_ERR(clEnqueueReadBuffer(queue, src, CL_TRUE, 0, N * 4, back, 0, NULL, NULL), CL_SUCCESS);
    int all = 1;
    for (int i = 0; i < N; i++) all &= back[i] == pattern;
    CHECK(all);
    /* copy_bytes from the buffer into the sub-buffer at 4096 of dst. */
    cl_buffer_region region = {4096, N * 4};
    cl_mem sub = clCreateSubBuffer(dst, 0, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
    CHECK_ERR(err, CL_SUCCESS);
    cl_ulong bytes = N * 4;
    CHECK_ERR(clSetKernelArg(copy, 0, sizeof sub, &sub), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(copy, 1, sizeof src, &src), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(copy, 2, sizeof bytes, &bytes), CL_SUCCESS);
    CHECK_ERR(clEnqueueTask(queue, copy, 0, NULL, NULL), CL_SUCCESS);
    CHECK_ERR(clEnqueueReadBuffer(queue, dst, CL_TRUE, 0, sizeof back, back, 0, NULL, NULL), CL_SUCCESS);
    all = 1;
    for (int i = 0; i < 2 * N; i++) all &= back[i] == (i >= 1024 && i < 1024 + N ? pattern : 0);
    CHECK(all);
    /* More bytes than the buffer holds. */
    bytes = N * 4 + 1;
    CHECK_ERR(clSetKernelArg(copy, 2, sizeof bytes, &bytes), CL_SUCCESS);
    CHECK_ERR(clEnqueueTask(queue, copy, 0, NULL, NULL), CL_INVALID_KERNEL_ARGS);
    /* A released handle; a buffer of another context. */
    clReleaseMemObject(sub);
    CHECK_ERR(clSetKernelArg(copy, 0, sizeof sub, &sub), CL_INVALID_MEM_OBJECT);
    cl_context other = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    cl_mem foreign = clCreateBuffer(other, 0, 64, NULL, &err);
    CHECK_ERR(err, CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(copy, 0, sizeof foreign, &foreign), CL_INVALID_MEM_OBJECT);
    clReleaseMemObject(foreign);
    clReleaseContext(other);
    clReleaseMemObject(src);
    clReleaseMemObject(dst);
    clReleaseKernel(fill);
    clReleaseKernel(copy);
    clReleaseProgram(p);
}

struct native_args {
    cl_mem buffer; /* replaced by the buffer's memory */
    uint32_t add;
    uint32_t *seen;
};

static void CL_CALLBACK native_add(void *a) {
    struct native_args *args = a;
    uint32_t *words = (uint32_t *)args->buffer;
    for (int i = 0; i < 64; i++) words[i] += args->add;
    *args->seen = 1;
}

static void test_native_kernel(void) {
    cl_int err = 1;
    uint32_t init[64];
    for (int i = 0; i < 64; i++) init[i] = (uint32_t)i;
    cl_mem b = clCreateBuffer(ctx, CL_MEM_COPY_HOST_PTR, sizeof init, init, &err);
    static uint32_t seen;
    struct native_args args = {b, 100, &seen};
    const void *loc = &args.buffer;
    cl_event ev = NULL;
    CHECK_ERR(clEnqueueNativeKernel(queue, native_add, &args, sizeof args, 1, &b, &loc, 0, NULL, &ev), CL_SUCCESS);
    /* The arguments were copied: changing them now changes nothing. */
    args.add = 1000;
    CHECK_ERR(clWaitForEvents(1, &ev), CL_SUCCESS);
    cl_command_type ct = 0;
    CHECK_ERR(clGetEventInfo(ev, CL_EVENT_COMMAND_TYPE, sizeof ct, &ct, NULL), CL_SUCCESS);
    CHECK(ct == CL_COMMAND_NATIVE_KERNEL);
    clReleaseEvent(ev);
    CHECK(seen == 1);
    uint32_t back[64] = {0};
    CHECK_ERR(clEnqueueReadBuffer(queue, b, CL_TRUE, 0, sizeof back, back, 0, NULL, NULL), CL_SUCCESS);
    CHECK(back[0] == 100 && back[63] == 163);
    cl_uint maps = 9;
    CHECK_ERR(clGetMemObjectInfo(b, CL_MEM_MAP_COUNT, sizeof maps, &maps, NULL), CL_SUCCESS);
    CHECK(maps == 0);
    /* Errors. */
    args.add = 100;
    CHECK_ERR(clEnqueueNativeKernel(queue, NULL, &args, sizeof args, 1, &b, &loc, 0, NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(clEnqueueNativeKernel(queue, native_add, NULL, sizeof args, 0, NULL, NULL, 0, NULL, NULL),
              CL_INVALID_VALUE);
    CHECK_ERR(clEnqueueNativeKernel(queue, native_add, &args, 0, 0, NULL, NULL, 0, NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(clEnqueueNativeKernel(queue, native_add, &args, sizeof args, 1, NULL, &loc, 0, NULL, NULL),
              CL_INVALID_VALUE);
    CHECK_ERR(clEnqueueNativeKernel(queue, native_add, &args, sizeof args, 0, &b, NULL, 0, NULL, NULL),
              CL_INVALID_VALUE);
    /* A size no copy of args can have: CL_OUT_OF_HOST_MEMORY, not a panic
       (CL_OUT_OF_RESOURCES) or an abort (found by fuzz_test). */
    CHECK_ERR(clEnqueueNativeKernel(queue, native_add, &args, SIZE_MAX - 15, 0, NULL, NULL, 0, NULL, NULL),
              CL_OUT_OF_HOST_MEMORY);
    const void *outside = (const char *)&args + sizeof args - 4;
    CHECK_ERR(clEnqueueNativeKernel(queue, native_add, &args, sizeof args, 1, &b, &outside, 0, NULL, NULL),
              CL_INVALID_VALUE);
    cl_mem notmem = (cl_mem)ctx;
    CHECK_ERR(clEnqueueNativeKernel(queue, native_add, &args, sizeof args, 1, &notmem, &loc, 0, NULL, NULL),
              CL_INVALID_MEM_OBJECT);
    CHECK_ERR(clEnqueueNativeKernel(NULL, native_add, &args, sizeof args, 1, &b, &loc, 0, NULL, NULL),
              CL_INVALID_COMMAND_QUEUE);
    CHECK_ERR(clEnqueueNativeKernel(queue, native_add, &args, sizeof args, 1, &b, &loc, 1, NULL, NULL),
              CL_INVALID_EVENT_WAIT_LIST);
    CHECK_ERR(clFinish(queue), CL_SUCCESS);
    CHECK_ERR(clEnqueueReadBuffer(queue, b, CL_TRUE, 0, sizeof back, back, 0, NULL, NULL), CL_SUCCESS);
    CHECK(back[0] == 100); /* no refused call ran */
    CHECK_ERR(clGetMemObjectInfo(b, CL_MEM_MAP_COUNT, sizeof maps, &maps, NULL), CL_SUCCESS);
    CHECK(maps == 0);
    clReleaseMemObject(b);
}

int main(void) {
    setup();
    static const struct test_case tests[] = {
        {"kernels::builtin_program", test_builtin_program},
        {"kernels::source_program", test_source_program},
        {"kernels::no_compiler_no_language", test_no_compiler_no_language},
        {"kernels::kernel_objects", test_kernel_objects},
        {"kernels::args_and_launch", test_args_and_launch},
        {"kernels::buffer_args", test_buffer_args},
        {"kernels::native_kernel", test_native_kernel},
    };
    int ready = platform && device && ctx && queue;
    RUN_TESTS(tests, ready);
    close_cpu_device(ctx, queue);
    return finish_tests();
}
