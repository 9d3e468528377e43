/* C tests of OpenCL C programs from source on dmabridge's CPU device, which
 * PoCL compiles and runs (driver/dmabridge-icd/src/pocl), through the real
 * loader: the program and kernel API rules with their exact codes (build
 * failure and its log, options, kernel names, argument index, size and
 * value rules, CL_INVALID_PROGRAM_EXECUTABLE, work-group sizes), compile and
 * link, and kernels on each memory kind of the host (USM host, device and
 * shared, SVM, buffers and sub-buffers, __local memory with barriers,
 * imported host memory), and that a kernel writes dmabridge's memfd pages in
 * place: a second mapping of the memfd sees its writes before any read, map
 * or finish (the PoCL behaviour the bridge relies on). In the QEMU guest also
 * (each ignored where its device is missing): an exported dma-buf imported
 * and written by a kernel, seen through a second mapping of the dma-buf
 * (udmabuf); building for edu (no compute) answers CL_COMPILER_NOT_AVAILABLE
 * and its queue cannot run a kernel from source; an external physical buffer
 * (ivshmem's BAR) is refused as an argument; a bus-addressable buffer
 * filled by edu is read by a kernel. Without PoCL every test
 * is ignored, unless DMABRIDGE_EXPECT_POCL=1 (tests/icd/run on x86_64), when
 * that fails. Closing line: "N passed, N failed". */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <CL/cl_amd_bus.h>
#include <CL/cl_dmabridge.h>
#include <CL/cl_ext.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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
static clSetKernelArgMemPointerINTEL_fn set_arg_ptr;
typedef __typeof__(&clImportMemoryARM) import_arm_fn;
static import_arm_fn import;
static clGetMemObjectDmaBufFdDMABRIDGE_fn mem_fd;

static const char *SRC =
    "kernel void scale(global float *dst, global const float *src, float a) {\n"
    "    size_t i = get_global_id(0); dst[i] = a * src[i];\n"
    "}\n"
    "kernel void fill(global uint *p, uint v) { p[get_global_id(0)] = v + (uint)get_global_id(0); }\n"
    "kernel void sum(global const uint *in, global uint *out, local uint *tmp) {\n"
    "    size_t l = get_local_id(0), n = get_local_size(0);\n"
    "    tmp[l] = in[get_global_id(0)];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    for (size_t s = n / 2; s > 0; s /= 2) { if (l < s) tmp[l] += tmp[l + s]; barrier(CLK_LOCAL_MEM_FENCE); }\n"
    "    if (l == 0) out[get_group_id(0)] = tmp[0];\n"
    "}\n";

static cl_program build(const char *src, const char *options, cl_int *code) {
    cl_int err = 1;
    cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    CHECK(p != NULL && err == CL_SUCCESS);
    *code = clBuildProgram(p, 1, &device, options, NULL, NULL);
    return p;
}

static int notified;
static void CL_CALLBACK on_build(cl_program p, void *data) {
    (void)p;
    notified += *(int *)data;
}

static void test_device_reports_compiler(void) {
    cl_bool comp = 0, link = 0;
    char ver[128] = {0};
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_COMPILER_AVAILABLE, sizeof comp, &comp, NULL), CL_SUCCESS);
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_LINKER_AVAILABLE, sizeof link, &link, NULL), CL_SUCCESS);
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_OPENCL_C_VERSION, sizeof ver, ver, NULL), CL_SUCCESS);
    CHECK(comp == CL_TRUE && link == CL_TRUE);
    CHECK(strncmp(ver, "OpenCL C 1.2", 12) == 0);
    /* The versions PoCL compiles, 1.2 among them. */
    cl_name_version nv[16];
    size_t size = 0;
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_OPENCL_C_ALL_VERSIONS, sizeof nv, nv, &size), CL_SUCCESS);
    int has_12 = 0;
    for (size_t i = 0; i < size / sizeof nv[0]; i++) has_12 |= nv[i].version == CL_MAKE_VERSION(1, 2, 0);
    CHECK(has_12);
}

static void test_build_rules(void) {
    cl_int err = 1, code = 1;
    /* A compile error: CL_BUILD_PROGRAM_FAILURE, the status and the compiler's log. */
    cl_program bad = build("kernel void k(global int *p) { p[0] = undeclared; }", NULL, &code);
    CHECK_ERR(code, CL_BUILD_PROGRAM_FAILURE);
    cl_build_status st = 99;
    CHECK_ERR(clGetProgramBuildInfo(bad, device, CL_PROGRAM_BUILD_STATUS, sizeof st, &st, NULL), CL_SUCCESS);
    CHECK(st == CL_BUILD_ERROR);
    char log[4096] = {0};
    CHECK_ERR(clGetProgramBuildInfo(bad, device, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL), CL_SUCCESS);
    CHECK(strstr(log, "undeclared") != NULL);
    CHECK(clCreateKernel(bad, "k", &err) == NULL && err == CL_INVALID_PROGRAM_EXECUTABLE);
    size_t nk = 0;
    CHECK_ERR(clGetProgramInfo(bad, CL_PROGRAM_NUM_KERNELS, sizeof nk, &nk, NULL), CL_INVALID_PROGRAM_EXECUTABLE);
    clReleaseProgram(bad);
    /* Invalid options. */
    cl_program opt = build(SRC, "-cl-no-such-option", &code);
    CHECK_ERR(code, CL_INVALID_BUILD_OPTIONS);
    clReleaseProgram(opt);
    /* Before any build: no executable. */
    cl_program p = clCreateProgramWithSource(ctx, 1, &SRC, NULL, &err);
    CHECK(clCreateKernel(p, "scale", &err) == NULL && err == CL_INVALID_PROGRAM_EXECUTABLE);
    /* A build with options, the callback, then the names, options and binary type. */
    int one = 1;
    notified = 0;
    CHECK_ERR(clBuildProgram(p, 0, NULL, "-cl-fast-relaxed-math -DX=1", on_build, &one), CL_SUCCESS);
    CHECK(notified == 1);
    CHECK_ERR(clBuildProgram(p, 0, NULL, NULL, NULL, &one), CL_INVALID_VALUE);
    CHECK_ERR(clGetProgramBuildInfo(p, device, CL_PROGRAM_BUILD_STATUS, sizeof st, &st, NULL), CL_SUCCESS);
    CHECK(st == CL_BUILD_SUCCESS);
    char text[256] = {0};
    CHECK_ERR(clGetProgramBuildInfo(p, device, CL_PROGRAM_BUILD_OPTIONS, sizeof text, text, NULL), CL_SUCCESS);
    CHECK(strcmp(text, "-cl-fast-relaxed-math -DX=1") == 0);
    cl_program_binary_type bt = 0;
    CHECK_ERR(clGetProgramBuildInfo(p, device, CL_PROGRAM_BINARY_TYPE, sizeof bt, &bt, NULL), CL_SUCCESS);
    CHECK(bt == CL_PROGRAM_BINARY_TYPE_EXECUTABLE);
    CHECK_ERR(clGetProgramInfo(p, CL_PROGRAM_NUM_KERNELS, sizeof nk, &nk, NULL), CL_SUCCESS);
    CHECK(nk == 3);
    CHECK_ERR(clGetProgramInfo(p, CL_PROGRAM_KERNEL_NAMES, sizeof text, text, NULL), CL_SUCCESS);
    CHECK(strstr(text, "scale") && strstr(text, "fill") && strstr(text, "sum"));
    CHECK(clCreateKernel(p, "nope", &err) == NULL && err == CL_INVALID_KERNEL_NAME);
    CHECK(clCreateKernel(p, NULL, &err) == NULL && err == CL_INVALID_VALUE);
    cl_kernel ks[3] = {0};
    cl_uint n = 0;
    CHECK_ERR(clCreateKernelsInProgram(p, 2, ks, NULL), CL_INVALID_VALUE);
    CHECK_ERR(clCreateKernelsInProgram(p, 3, ks, &n), CL_SUCCESS);
    CHECK(n == 3 && ks[0] && ks[1] && ks[2]);
    /* A kernel attached: no rebuild. */
    CHECK_ERR(clBuildProgram(p, 0, NULL, NULL, NULL, NULL), CL_INVALID_OPERATION);
    for (int i = 0; i < 3; i++) clReleaseKernel(ks[i]);
    CHECK_ERR(clBuildProgram(p, 0, NULL, NULL, NULL, NULL), CL_SUCCESS);
    clReleaseProgram(p);
}

static void test_compile_and_link(void) {
    cl_int err = 1;
    const char *hdr = "#define FACTOR 3u\n";
    const char *a = "#include \"factor.h\"\nuint triple(uint x) { return FACTOR * x; }\n";
    const char *b = "uint triple(uint x);\nkernel void k(global uint *p) { p[get_global_id(0)] = triple(p[get_global_id(0)]); }\n";
    cl_program ph = clCreateProgramWithSource(ctx, 1, &hdr, NULL, &err);
    cl_program pa = clCreateProgramWithSource(ctx, 1, &a, NULL, &err);
    cl_program pb = clCreateProgramWithSource(ctx, 1, &b, NULL, &err);
    const char *names[1] = {"factor.h"};
    CHECK_ERR(clCompileProgram(pa, 0, NULL, NULL, 1, &ph, names, NULL, NULL), CL_SUCCESS);
    CHECK_ERR(clCompileProgram(pb, 0, NULL, NULL, 0, NULL, NULL, NULL, NULL), CL_SUCCESS);
    cl_program_binary_type bt = 0;
    CHECK_ERR(clGetProgramBuildInfo(pa, device, CL_PROGRAM_BINARY_TYPE, sizeof bt, &bt, NULL), CL_SUCCESS);
    CHECK(bt == CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT);
    CHECK(clCreateKernel(pb, "k", &err) == NULL && err == CL_INVALID_PROGRAM_EXECUTABLE);
    /* A program never compiled cannot be linked. */
    cl_program in_bad[2] = {pa, ph};
    CHECK(clLinkProgram(ctx, 0, NULL, NULL, 2, in_bad, NULL, NULL, &err) == NULL && err == CL_INVALID_OPERATION);
    cl_program in[2] = {pa, pb};
    cl_program exe = clLinkProgram(ctx, 0, NULL, NULL, 2, in, NULL, NULL, &err);
    CHECK(exe != NULL && err == CL_SUCCESS);
    cl_kernel k = clCreateKernel(exe, "k", &err);
    CHECK_ERR(err, CL_SUCCESS);
    CHECK(k != NULL);
    cl_uint *v = host_alloc(ctx, NULL, 16 * sizeof(cl_uint), 0, &err);
    for (int i = 0; i < 16; i++) v[i] = (cl_uint)i;
    CHECK_ERR(set_arg_ptr(k, 0, v), CL_SUCCESS);
    size_t g = 16;
    CHECK_ERR(clEnqueueNDRangeKernel(queue, k, 1, NULL, &g, NULL, 0, NULL, NULL), CL_SUCCESS);
    CHECK_ERR(clFinish(queue), CL_SUCCESS);
    int ok = 1;
    for (int i = 0; i < 16; i++) ok &= v[i] == 3u * (cl_uint)i;
    CHECK(ok);
    mem_free(ctx, v);
    clReleaseKernel(k);
    clReleaseProgram(exe);
    clReleaseProgram(pa);
    clReleaseProgram(pb);
    clReleaseProgram(ph);
}

static cl_program main_program(void) {
    cl_int code = 1;
    cl_program p = build(SRC, NULL, &code);
    CHECK_ERR(code, CL_SUCCESS);
    return p;
}

static void test_argument_rules(void) {
    cl_int err = 1;
    cl_program p = main_program();
    cl_kernel k = clCreateKernel(p, "sum", &err);
    cl_kernel s = clCreateKernel(p, "scale", &err);
    CHECK(k && s);
    cl_uint nargs = 0;
    char name[32] = {0};
    CHECK_ERR(clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, NULL), CL_SUCCESS);
    CHECK(nargs == 3);
    CHECK_ERR(clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof name, name, NULL), CL_SUCCESS);
    CHECK(strcmp(name, "sum") == 0);
    cl_program kp = NULL;
    CHECK_ERR(clGetKernelInfo(k, CL_KERNEL_PROGRAM, sizeof kp, &kp, NULL), CL_SUCCESS);
    CHECK(kp == p);
    /* Argument info. */
    cl_kernel_arg_address_qualifier aq = 0;
    CHECK_ERR(clGetKernelArgInfo(k, 2, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof aq, &aq, NULL), CL_SUCCESS);
    CHECK(aq == CL_KERNEL_ARG_ADDRESS_LOCAL);
    CHECK_ERR(clGetKernelArgInfo(k, 0, CL_KERNEL_ARG_NAME, sizeof name, name, NULL), CL_SUCCESS);
    CHECK(strcmp(name, "in") == 0);
    CHECK_ERR(clGetKernelArgInfo(s, 2, CL_KERNEL_ARG_TYPE_NAME, sizeof name, name, NULL), CL_SUCCESS);
    CHECK(strcmp(name, "float") == 0);
    CHECK_ERR(clGetKernelArgInfo(k, 3, CL_KERNEL_ARG_NAME, sizeof name, name, NULL), CL_INVALID_ARG_INDEX);
    CHECK_ERR(clGetKernelArgInfo(k, 0, CL_KERNEL_ARG_NAME, 1, name, NULL), CL_INVALID_VALUE);
    /* Work-group info. */
    size_t wg = 0;
    CHECK_ERR(clGetKernelWorkGroupInfo(k, device, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL), CL_SUCCESS);
    CHECK(wg >= 1);
    CHECK_ERR(clGetKernelWorkGroupInfo(k, NULL, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL), CL_SUCCESS);
    /* Argument rules, each with its code. */
    float f = 2.0f;
    double d = 2.0;
    CHECK_ERR(clSetKernelArg(s, 3, sizeof f, &f), CL_INVALID_ARG_INDEX);
    CHECK_ERR(clSetKernelArg(s, 2, sizeof d, &d), CL_INVALID_ARG_SIZE);
    CHECK_ERR(clSetKernelArg(s, 2, sizeof f, NULL), CL_INVALID_ARG_VALUE);
    CHECK_ERR(clSetKernelArg(s, 2, sizeof f, &f), CL_SUCCESS);
    cl_mem notmem = (cl_mem)ctx;
    CHECK_ERR(clSetKernelArg(s, 0, sizeof notmem, &notmem), CL_INVALID_MEM_OBJECT);
    CHECK_ERR(clSetKernelArg(s, 0, 4, &notmem), CL_INVALID_ARG_SIZE);
    CHECK_ERR(clSetKernelArg(k, 2, 64, &f), CL_INVALID_ARG_VALUE);
    CHECK_ERR(clSetKernelArg(k, 2, 0, NULL), CL_INVALID_ARG_SIZE);
    CHECK_ERR(set_arg_ptr(s, 2, &f), CL_INVALID_ARG_VALUE);
    CHECK_ERR(set_arg_ptr(s, 9, &f), CL_INVALID_ARG_INDEX);
    /* Unset arguments at launch. */
    size_t g = 4, l = 4;
    CHECK_ERR(clEnqueueNDRangeKernel(queue, s, 1, NULL, &g, NULL, 0, NULL, NULL), CL_INVALID_KERNEL_ARGS);
    /* A work-group larger than the kernel's. */
    cl_uint *in = host_alloc(ctx, NULL, 4096, 0, &err), *out = host_alloc(ctx, NULL, 4096, 0, &err);
    CHECK_ERR(set_arg_ptr(k, 0, in), CL_SUCCESS);
    CHECK_ERR(set_arg_ptr(k, 1, out), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(k, 2, 16, NULL), CL_SUCCESS);
    CHECK(wg <= 1024);
    size_t big[2] = {32, (wg + 31) / 32 * 2}, gbig[2] = {32, big[1]};
    CHECK_ERR(clEnqueueNDRangeKernel(queue, k, 2, NULL, gbig, big, 0, NULL, NULL), CL_INVALID_WORK_GROUP_SIZE);
    CHECK_ERR(clEnqueueNDRangeKernel(queue, k, 0, NULL, &g, &l, 0, NULL, NULL), CL_INVALID_WORK_DIMENSION);
    CHECK_ERR(clFinish(queue), CL_SUCCESS);
    mem_free(ctx, in);
    mem_free(ctx, out);
    clReleaseKernel(k);
    clReleaseKernel(s);
    clReleaseProgram(p);
}

/* fill(p, 100) over n words of p through `set` (USM, SVM), checked. */
static void fill_and_check(cl_kernel k, cl_uint *p, size_t n) {
    CHECK_ERR(set_arg_ptr(k, 0, p), CL_SUCCESS);
    cl_uint v = 100;
    CHECK_ERR(clSetKernelArg(k, 1, sizeof v, &v), CL_SUCCESS);
    cl_event ev = NULL;
    CHECK_ERR(clEnqueueNDRangeKernel(queue, k, 1, NULL, &n, NULL, 0, NULL, &ev), CL_SUCCESS);
    CHECK_ERR(clWaitForEvents(1, &ev), CL_SUCCESS);
    cl_command_type ty = 0;
    CHECK_ERR(clGetEventInfo(ev, CL_EVENT_COMMAND_TYPE, sizeof ty, &ty, NULL), CL_SUCCESS);
    CHECK(ty == CL_COMMAND_NDRANGE_KERNEL);
    clReleaseEvent(ev);
}

static void test_usm_and_svm(void) {
    cl_int err = 1;
    cl_program p = main_program();
    cl_kernel k = clCreateKernel(p, "fill", &err);
    const size_t n = 1024;
    cl_uint *h = host_alloc(ctx, NULL, n * 4, 0, &err);
    cl_uint *s = shared_alloc(ctx, device, NULL, n * 4, 0, &err);
    cl_uint *d = device_alloc(ctx, device, NULL, n * 4, 0, &err);
    cl_uint *svm = clSVMAlloc(ctx, CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER, n * 4, 0);
    CHECK(h && s && d && svm);
    cl_uint *all[4] = {h, s, d, svm};
    for (int i = 0; i < 4; i++) {
        if (i == 3) CHECK_ERR(clSetKernelArgSVMPointer(k, 0, svm), CL_SUCCESS);
        fill_and_check(k, all[i], n);
        int ok = 1;
        /* The CPU device's device allocations are host memory too. */
        for (size_t j = 0; j < n; j++) ok &= all[i][j] == 100u + (cl_uint)j;
        CHECK(ok);
    }
    mem_free(ctx, h);
    mem_free(ctx, s);
    mem_free(ctx, d);
    clSVMFree(ctx, svm);
    clReleaseKernel(k);
    clReleaseProgram(p);
}

/* Launches on pointers only are started without a worker and ended by
 * PoCL's thread (driver/dmabridge-icd/src/pocl/kernel.rs): they still keep
 * the in-order queue's order and wait for their wait list. fill(p, 100)
 * waits for a user event, fill(p, 200) behind it may not run first; then
 * 64 launches queued back to back end with the last one's values. */
static int completions;
static void CL_CALLBACK on_complete(cl_event e, cl_int status, void *data) {
    (void)e;
    (void)data;
    if (status == CL_COMPLETE) __atomic_add_fetch(&completions, 1, __ATOMIC_SEQ_CST);
}
static void test_pointer_launches_keep_queue_order(void) {
    cl_int err = 1;
    cl_program p = main_program();
    cl_kernel k = clCreateKernel(p, "fill", &err);
    size_t n = 1024;
    cl_uint *h = host_alloc(ctx, NULL, n * 4, 0, &err);
    CHECK(k && h);
    memset(h, 0, n * 4);
    CHECK_ERR(set_arg_ptr(k, 0, h), CL_SUCCESS);
    cl_event gate = clCreateUserEvent(ctx, &err), first = NULL, second = NULL;
    cl_uint v = 100;
    CHECK_ERR(clSetKernelArg(k, 1, sizeof v, &v), CL_SUCCESS);
    CHECK_ERR(clEnqueueNDRangeKernel(queue, k, 1, NULL, &n, NULL, 1, &gate, &first), CL_SUCCESS);
    v = 200;
    CHECK_ERR(clSetKernelArg(k, 1, sizeof v, &v), CL_SUCCESS);
    CHECK_ERR(clEnqueueNDRangeKernel(queue, k, 1, NULL, &n, NULL, 0, NULL, &second), CL_SUCCESS);
    CHECK_ERR(clSetEventCallback(second, CL_COMPLETE, on_complete, NULL), CL_SUCCESS);
    usleep(20000); /* time for a launch that does not wait to run */
    cl_int st = 0;
    CHECK_ERR(clGetEventInfo(second, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL), CL_SUCCESS);
    CHECK(st > CL_COMPLETE);
    CHECK(h[0] == 0);
    CHECK_ERR(clSetUserEventStatus(gate, CL_COMPLETE), CL_SUCCESS);
    CHECK_ERR(clWaitForEvents(1, &second), CL_SUCCESS);
    CHECK_ERR(clGetEventInfo(first, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL), CL_SUCCESS);
    CHECK(st == CL_COMPLETE);
    int ok = 1;
    for (size_t j = 0; j < n; j++) ok &= h[j] == 200u + (cl_uint)j;
    CHECK(ok);
    for (cl_uint i = 0; i < 64; i++) {
        v = 1000 * i;
        CHECK_ERR(clSetKernelArg(k, 1, sizeof v, &v), CL_SUCCESS);
        CHECK_ERR(clEnqueueNDRangeKernel(queue, k, 1, NULL, &n, NULL, 0, NULL, NULL), CL_SUCCESS);
    }
    CHECK_ERR(clFinish(queue), CL_SUCCESS);
    ok = 1;
    for (size_t j = 0; j < n; j++) ok &= h[j] == 63000u + (cl_uint)j;
    CHECK(ok);
    /* The callback runs once the event is complete, on another thread. */
    for (int i = 0; i < 500 && __atomic_load_n(&completions, __ATOMIC_SEQ_CST) == 0; i++) usleep(10000);
    CHECK(__atomic_load_n(&completions, __ATOMIC_SEQ_CST) == 1);
    clReleaseEvent(first);
    clReleaseEvent(second);
    clReleaseEvent(gate);
    mem_free(ctx, h);
    clReleaseKernel(k);
    clReleaseProgram(p);
}

static void test_buffers_and_local_memory(void) {
    cl_int err = 1;
    cl_program p = main_program();
    cl_kernel k = clCreateKernel(p, "sum", &err);
    enum { N = 256, L = 64 };
    cl_uint in[N], out[N / L] = {0};
    for (int i = 0; i < N; i++) in[i] = (cl_uint)i;
    cl_mem bin = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof in, in, &err);
    cl_mem bigout = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4096, NULL, &err);
    cl_buffer_region r = {1024, sizeof out};
    cl_mem bout = clCreateSubBuffer(bigout, 0, CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
    CHECK(bin && bout);
    CHECK_ERR(clSetKernelArg(k, 0, sizeof bin, &bin), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(k, 1, sizeof bout, &bout), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(k, 2, L * sizeof(cl_uint), NULL), CL_SUCCESS);
    /* Ordered after a user event: the launch waits for it. */
    cl_event gate = clCreateUserEvent(ctx, &err), ev = NULL;
    size_t g = N, l = L;
    CHECK_ERR(clEnqueueNDRangeKernel(queue, k, 1, NULL, &g, &l, 1, &gate, &ev), CL_SUCCESS);
    cl_int st = 0;
    CHECK_ERR(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL), CL_SUCCESS);
    CHECK(st > CL_COMPLETE);
    CHECK_ERR(clSetUserEventStatus(gate, CL_COMPLETE), CL_SUCCESS);
    CHECK_ERR(clEnqueueReadBuffer(queue, bout, CL_TRUE, 0, sizeof out, out, 1, &ev, NULL), CL_SUCCESS);
    for (int gi = 0; gi < N / L; gi++) {
        cl_uint want = 0;
        for (int i = gi * L; i < (gi + 1) * L; i++) want += (cl_uint)i;
        CHECK(out[gi] == want);
    }
    clReleaseEvent(ev);
    clReleaseEvent(gate);
    clReleaseMemObject(bout);
    clReleaseMemObject(bigout);
    clReleaseMemObject(bin);
    clReleaseKernel(k);
    clReleaseProgram(p);
}

static void test_imported_host_memory(void) {
    cl_int err = 1;
    if (!import) {
        CHECK(!"no clImportMemoryARM");
        return;
    }
    long page = sysconf(_SC_PAGESIZE);
    cl_uint *mem = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    const cl_import_properties_arm props[] = {CL_IMPORT_TYPE_ARM, CL_IMPORT_TYPE_HOST_ARM, 0};
    cl_mem b = import(ctx, CL_MEM_READ_WRITE, props, mem, (size_t)page, &err);
    CHECK(b != NULL && err == CL_SUCCESS);
    cl_program p = main_program();
    cl_kernel k = clCreateKernel(p, "fill", &err);
    cl_uint v = 7;
    CHECK_ERR(clSetKernelArg(k, 0, sizeof b, &b), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(k, 1, sizeof v, &v), CL_SUCCESS);
    size_t g = 64;
    cl_event ev = NULL;
    CHECK_ERR(clEnqueueNDRangeKernel(queue, k, 1, NULL, &g, NULL, 0, NULL, &ev), CL_SUCCESS);
    CHECK_ERR(clWaitForEvents(1, &ev), CL_SUCCESS);
    /* The application's own pages hold the result: no copy, no read. */
    CHECK(mem[0] == 7 && mem[63] == 70 && mem[64] == 0);
    /* Pages mapped read-only make a read-only buffer: a kernel may read it
     * through a const pointer, never write it (the write would fault). */
    float *ro = mmap(NULL, (size_t)page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cl_mem rb = import(ctx, CL_MEM_READ_WRITE, NULL, ro, (size_t)page, &err);
    CHECK(rb != NULL && err == CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(k, 0, sizeof rb, &rb), CL_SUCCESS);
    CHECK_ERR(clEnqueueNDRangeKernel(queue, k, 1, NULL, &g, NULL, 0, NULL, NULL), CL_INVALID_OPERATION);
    cl_kernel scale = clCreateKernel(p, "scale", &err);
    float a = 2.0f;
    CHECK_ERR(clSetKernelArg(scale, 0, sizeof b, &b), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(scale, 1, sizeof rb, &rb), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(scale, 2, sizeof a, &a), CL_SUCCESS);
    CHECK_ERR(clEnqueueNDRangeKernel(queue, scale, 1, NULL, &g, NULL, 0, NULL, NULL), CL_SUCCESS);
    CHECK_ERR(clFinish(queue), CL_SUCCESS);
    CHECK(mem[0] == 0 && mem[63] == 0);
    clReleaseKernel(scale);
    clReleaseMemObject(rb);
    munmap(ro, (size_t)page);
    clReleaseEvent(ev);
    clReleaseKernel(k);
    clReleaseProgram(p);
    clReleaseMemObject(b);
    munmap(mem, (size_t)page);
}

/* The memfd behind `p` mapped a second time (NULL if not found): its line in
 * /proc/self/maps gives the range and file offset, /proc/self/map_files the file. */
static cl_uint *second_mapping(void *p, size_t len, void **base, size_t *maplen) {
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    uintptr_t a = (uintptr_t)p;
    cl_uint *out = NULL;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long start, end, off;
        if (sscanf(line, "%lx-%lx %*s %lx", &start, &end, &off) != 3 || a < start || a >= end) continue;
        if (!strstr(line, "memfd:")) break;
        char path[128];
        snprintf(path, sizeof path, "/proc/self/map_files/%lx-%lx", start, end);
        int fd = open(path, O_RDWR);
        if (fd < 0) break;
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        size_t at = off + (a - start), aligned = at & ~(page - 1);
        *maplen = len + (at - aligned);
        *base = mmap(NULL, *maplen, PROT_READ, MAP_SHARED, fd, (off_t)aligned);
        close(fd);
        if (*base != MAP_FAILED) out = (cl_uint *)((char *)*base + (at - aligned));
        break;
    }
    if (f) fclose(f);
    return out;
}

static void test_kernel_writes_memfd_pages_in_place(void) {
    cl_int err = 1;
    const size_t n = 4096;
    cl_uint *h = host_alloc(ctx, NULL, n * 4, 0, &err);
    void *base = NULL;
    size_t maplen = 0;
    cl_uint *other = second_mapping(h, n * 4, &base, &maplen);
    CHECK(other != NULL);
    if (!other) {
        mem_free(ctx, h);
        return;
    }
    cl_program p = main_program();
    cl_kernel k = clCreateKernel(p, "fill", &err);
    CHECK_ERR(set_arg_ptr(k, 0, h), CL_SUCCESS);
    cl_uint v = 5;
    CHECK_ERR(clSetKernelArg(k, 1, sizeof v, &v), CL_SUCCESS);
    cl_event ev = NULL;
    CHECK_ERR(clEnqueueNDRangeKernel(queue, k, 1, NULL, &n, NULL, 0, NULL, &ev), CL_SUCCESS);
    /* Only the event's completion: no read, map or finish. */
    CHECK_ERR(clWaitForEvents(1, &ev), CL_SUCCESS);
    int ok = 1;
    for (size_t i = 0; i < n; i++) ok &= other[i] == 5u + (cl_uint)i;
    CHECK(ok);
    munmap(base, maplen);
    clReleaseEvent(ev);
    clReleaseKernel(k);
    clReleaseProgram(p);
    mem_free(ctx, h);
}


/* The guest's tests: each says why it does not run where its device is missing.
 * They build this one small kernel: under TCG PoCL's compile is most of their time. */
static const char *why_not_here;
static const char *FILL_SRC =
    "kernel void fill(global uint *p, uint v) { p[get_global_id(0)] = v + (uint)get_global_id(0); }\n"
    "kernel void add(global uint *dst, global const uint *src, uint v) {\n"
    "    dst[get_global_id(0)] = src[get_global_id(0)] + v;\n"
    "}\n";

static cl_program fill_program(void) {
    cl_int code = 1;
    cl_program p = build(FILL_SRC, NULL, &code);
    CHECK_ERR(code, CL_SUCCESS);
    return p;
}

static void test_dma_buf_in_place(void) {
    cl_int err = 1;
    long page = sysconf(_SC_PAGESIZE);
    size_t n = 2 * (size_t)page;
    cl_mem src = clCreateBuffer(ctx, CL_MEM_ALLOC_HOST_PTR, n, NULL, &err);
    int fd = -1;
    CHECK_ERR(mem_fd(src, NULL, &fd), CL_SUCCESS);
    if (fd < 0) {
        clReleaseMemObject(src);
        return;
    }
    cl_uint *other = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0);
    CHECK(other != MAP_FAILED);
    cl_import_properties_arm props[] = {CL_IMPORT_TYPE_ARM, CL_IMPORT_TYPE_DMA_BUF_ARM, 0};
    cl_mem b = import(ctx, CL_MEM_READ_WRITE, props, &fd, n, &err);
    CHECK(b != NULL && err == CL_SUCCESS);
    close(fd);
    cl_program p = fill_program();
    cl_kernel k = clCreateKernel(p, "fill", &err);
    cl_uint v = 11;
    CHECK_ERR(clSetKernelArg(k, 0, sizeof b, &b), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(k, 1, sizeof v, &v), CL_SUCCESS);
    size_t g = n / sizeof(cl_uint);
    cl_event ev = NULL;
    CHECK_ERR(clEnqueueNDRangeKernel(queue, k, 1, NULL, &g, NULL, 0, NULL, &ev), CL_SUCCESS);
    CHECK_ERR(clWaitForEvents(1, &ev), CL_SUCCESS);
    /* The dma-buf's pages themselves, seen through another mapping of it. */
    int ok = other != MAP_FAILED;
    for (size_t i = 0; ok && i < g; i++) ok &= other[i] == 11u + (cl_uint)i;
    CHECK(ok);
    if (other != MAP_FAILED) munmap(other, n);
    clReleaseEvent(ev);
    clReleaseKernel(k);
    clReleaseProgram(p);
    clReleaseMemObject(b);
    clReleaseMemObject(src);
}

static void test_edu_has_no_compiler(void) {
    cl_device_id devs[2] = {device, NULL};
    CHECK_ERR(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ACCELERATOR, 1, &devs[1], NULL), CL_SUCCESS);
    cl_bool comp = 1;
    CHECK_ERR(clGetDeviceInfo(devs[1], CL_DEVICE_COMPILER_AVAILABLE, sizeof comp, &comp, NULL), CL_SUCCESS);
    CHECK(comp == CL_FALSE);
    cl_int err = 1;
    cl_context both = clCreateContext(NULL, 2, devs, NULL, NULL, &err);
    cl_program p = clCreateProgramWithSource(both, 1, &FILL_SRC, NULL, &err);
    CHECK_ERR(clBuildProgram(p, 0, NULL, NULL, NULL, NULL), CL_COMPILER_NOT_AVAILABLE);
    CHECK_ERR(clBuildProgram(p, 1, &devs[1], NULL, NULL, NULL), CL_COMPILER_NOT_AVAILABLE);
    char log[512] = {0};
    CHECK_ERR(clGetProgramBuildInfo(p, devs[1], CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL), CL_SUCCESS);
    CHECK(strstr(log, "CPU device") != NULL);
    /* For the CPU device alone it builds; edu's queue cannot run it. */
    CHECK_ERR(clBuildProgram(p, 1, &devs[0], NULL, NULL, NULL), CL_SUCCESS);
    cl_kernel k = clCreateKernel(p, "fill", &err);
    cl_uint *h = host_alloc(both, NULL, 64, 0, &err), v = 1;
    CHECK_ERR(set_arg_ptr(k, 0, h), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(k, 1, sizeof v, &v), CL_SUCCESS);
    cl_command_queue edu_q = clCreateCommandQueueWithProperties(both, devs[1], NULL, &err);
    size_t g = 16;
    CHECK_ERR(clEnqueueNDRangeKernel(edu_q, k, 1, NULL, &g, NULL, 0, NULL, NULL), CL_INVALID_PROGRAM_EXECUTABLE);
    clReleaseCommandQueue(edu_q);
    mem_free(both, h);
    clReleaseKernel(k);
    clReleaseProgram(p);
    clReleaseContext(both);
}

/* The bus address of ivshmem's BAR 2 (0000:00:08.0), from sysfs; 0 if absent. */
static cl_ulong ivshmem_bar2(void) {
    FILE *f = fopen("/sys/bus/pci/devices/0000:00:08.0/resource", "r");
    if (!f) return 0;
    unsigned long long start = 0, end = 0, flags = 0;
    for (int i = 0; i < 3; i++)
        if (fscanf(f, "%llx %llx %llx", &start, &end, &flags) != 3) start = 0;
    fclose(f);
    return start;
}

static void test_external_physical_refused(void) {
    cl_int err = 1;
    cl_bus_address_amd at = {ivshmem_bar2() + 0x200000, 0};
    at.marker_bus_address = at.surface_bus_address + 0x80000;
    cl_mem x = clCreateBuffer(ctx, CL_MEM_EXTERNAL_PHYSICAL_AMD | CL_MEM_WRITE_ONLY, 4096, &at, &err);
    CHECK(x != NULL && err == CL_SUCCESS);
    if (!x) return;
    cl_program p = fill_program();
    cl_kernel k = clCreateKernel(p, "fill", &err);
    cl_uint v = 1;
    CHECK_ERR(clSetKernelArg(k, 0, sizeof x, &x), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(k, 1, sizeof v, &v), CL_SUCCESS);
    size_t g = 16;
    CHECK_ERR(clEnqueueNDRangeKernel(queue, k, 1, NULL, &g, NULL, 0, NULL, NULL), CL_INVALID_OPERATION);
    CHECK_ERR(clFinish(queue), CL_SUCCESS);
    clReleaseKernel(k);
    clReleaseProgram(p);
    clReleaseMemObject(x);
}

/* cl_amd_bus_addressable_memory with a kernel from source: a bus-addressable
 * buffer made resident (its bus address in the IOMMU domain edu DMAs in) is
 * filled by the edu engine (a write on edu's queue: edu's DMA into the
 * buffer's pages), then a kernel on the CPU queue, ordered after edu's
 * event, reads it in place and writes its sums to USM. */
static void test_bus_addressable_filled_by_edu(void) {
    cl_int err = 1;
    cl_device_id devs[2] = {device, NULL};
    CHECK_ERR(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ACCELERATOR, 1, &devs[1], NULL), CL_SUCCESS);
    clEnqueueMakeBuffersResidentAMD_fn resident = EXT_FN(platform, clEnqueueMakeBuffersResidentAMD);
    cl_context both = clCreateContext(NULL, 2, devs, NULL, NULL, &err);
    cl_command_queue cpu_q = clCreateCommandQueueWithProperties(both, devs[0], NULL, &err);
    cl_command_queue edu_q = clCreateCommandQueueWithProperties(both, devs[1], NULL, &err);
    enum { N = 4096 };
    cl_mem bus = clCreateBuffer(both, CL_MEM_BUS_ADDRESSABLE_AMD, N * sizeof(cl_uint), NULL, &err);
    CHECK(resident && both && cpu_q && edu_q && bus);
    if (!resident || !bus) goto out;
    cl_bus_address_amd at = {0, 0};
    CHECK_ERR(resident(edu_q, 1, &bus, CL_TRUE, &at, 0, NULL, NULL), CL_SUCCESS);
    CHECK(at.surface_bus_address != 0);
    static cl_uint frame[N];
    for (cl_uint i = 0; i < N; i++) frame[i] = i * 2654435761u;
    cl_event filled = NULL, ran = NULL;
    CHECK_ERR(clEnqueueWriteBuffer(edu_q, bus, CL_FALSE, 0, sizeof frame, frame, 0, NULL, &filled), CL_SUCCESS);
    cl_uint *out = host_alloc(both, NULL, sizeof frame, 0, &err);
    cl_program p = clCreateProgramWithSource(both, 1, &FILL_SRC, NULL, &err);
    CHECK_ERR(clBuildProgram(p, 1, &devs[0], NULL, NULL, NULL), CL_SUCCESS);
    cl_kernel k = clCreateKernel(p, "add", &err);
    cl_uint v = 3;
    CHECK_ERR(set_arg_ptr(k, 0, out), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(k, 1, sizeof bus, &bus), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(k, 2, sizeof v, &v), CL_SUCCESS);
    size_t g = N;
    CHECK_ERR(clEnqueueNDRangeKernel(cpu_q, k, 1, NULL, &g, NULL, 1, &filled, &ran), CL_SUCCESS);
    CHECK_ERR(clWaitForEvents(1, &ran), CL_SUCCESS);
    int ok = out != NULL;
    for (cl_uint i = 0; ok && i < N; i++) ok &= out[i] == frame[i] + 3;
    CHECK(ok);
    clReleaseEvent(filled);
    clReleaseEvent(ran);
    clReleaseKernel(k);
    clReleaseProgram(p);
    if (out) mem_free(both, out);
out:
    if (bus) clReleaseMemObject(bus);
    if (edu_q) clReleaseCommandQueue(edu_q);
    if (cpu_q) clReleaseCommandQueue(cpu_q);
    if (both) clReleaseContext(both);
}

/* Each guest test, or why it does not run here (NULL: it runs). */
static const char *udmabuf_missing(void) {
    int fd = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
    if (fd < 0) return "needs /dev/udmabuf: run in the QEMU guest (make test-guest-icd)";
    close(fd);
    return NULL;
}
static const char *edu_missing(void) {
    cl_device_id d = NULL;
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ACCELERATOR, 1, &d, NULL) != CL_SUCCESS)
        return "needs an edu device: run in the QEMU guest (make test-guest-icd)";
    return NULL;
}
static const char *bus_missing(void) {
    char ext[4096] = {0};
    clGetPlatformInfo(platform, CL_PLATFORM_EXTENSIONS, sizeof ext, ext, NULL);
    if (edu_missing() || !has_word(ext, "cl_amd_bus_addressable_memory"))
        return "needs an edu device and an IOMMU domain: run in the QEMU guest (make test-guest-icd)";
    return NULL;
}
static const char *bar_missing(void) {
    char ext[4096] = {0};
    clGetPlatformInfo(platform, CL_PLATFORM_EXTENSIONS, sizeof ext, ext, NULL);
    if (!ivshmem_bar2() || !strstr(ext, "cl_amd_bus_addressable_memory"))
        return "needs ivshmem and an IOMMU domain: run in the QEMU guest (make test-guest-icd)";
    return NULL;
}

static const struct {
    const char *name;
    void (*f)(void);
    const char *(*missing)(void);
} guest_tests[] = {
    {"pocl::dma_buf_in_place", test_dma_buf_in_place, udmabuf_missing},
    {"pocl::edu_has_no_compiler", test_edu_has_no_compiler, edu_missing},
    {"pocl::external_physical_refused", test_external_physical_refused, bar_missing},
    {"pocl::bus_addressable_filled_by_edu", test_bus_addressable_filled_by_edu, bus_missing},
};

static const struct test_case tests[] = {
    {"pocl::device_reports_compiler", test_device_reports_compiler},
    {"pocl::build_rules", test_build_rules},
    {"pocl::compile_and_link", test_compile_and_link},
    {"pocl::argument_rules", test_argument_rules},
    {"pocl::usm_and_svm", test_usm_and_svm},
    {"pocl::pointer_launches_keep_queue_order", test_pointer_launches_keep_queue_order},
    {"pocl::buffers_and_local_memory", test_buffers_and_local_memory},
    {"pocl::imported_host_memory", test_imported_host_memory},
    {"pocl::kernel_writes_memfd_pages_in_place", test_kernel_writes_memfd_pages_in_place},
};

/* --devices-only (tests/icd/run in the QEMU guests): the device reports and
 * the tests that need the guest's devices; the others ran on the host, and
 * under TCG each kernel PoCL compiles takes tens of seconds. */
int main(int argc, char **argv) {
    int devices_only = argc > 1 && strcmp(argv[1], "--devices-only") == 0;
    open_cpu_device(&platform, &device, &ctx, &queue);
    if (queue) {
        host_alloc = EXT_FN(platform, clHostMemAllocINTEL);
        device_alloc = EXT_FN(platform, clDeviceMemAllocINTEL);
        shared_alloc = EXT_FN(platform, clSharedMemAllocINTEL);
        mem_free = EXT_FN(platform, clMemFreeINTEL);
        set_arg_ptr = EXT_FN(platform, clSetKernelArgMemPointerINTEL);
        import = (import_arm_fn)clGetExtensionFunctionAddressForPlatform(platform, "clImportMemoryARM");
        mem_fd = EXT_FN(platform, clGetMemObjectDmaBufFdDMABRIDGE);
    }
    cl_bool comp = 0;
    if (device) clGetDeviceInfo(device, CL_DEVICE_COMPILER_AVAILABLE, sizeof comp, &comp, NULL);
    const char *expect = getenv("DMABRIDGE_EXPECT_POCL");
    if (device && !comp && !(expect && strcmp(expect, "1") == 0)) {
        for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) ignore_test(tests[i].name, "no PoCL here");
        for (size_t i = 0; i < sizeof guest_tests / sizeof guest_tests[0]; i++)
            ignore_test(guest_tests[i].name, "no PoCL here");
    } else {
        int ready = queue != NULL && host_alloc && mem_free && set_arg_ptr && import && mem_fd;
        if (devices_only) {
            run_test(tests[0].name, tests[0].f, ready);
            for (size_t i = 1; i < sizeof tests / sizeof tests[0]; i++)
                ignore_test(tests[i].name, "--devices-only: it runs on the host (tests/icd/run)");
        } else {
            RUN_TESTS(tests, ready);
        }
        for (size_t i = 0; i < sizeof guest_tests / sizeof guest_tests[0]; i++) {
            why_not_here = ready ? guest_tests[i].missing() : NULL;
            if (why_not_here) ignore_test(guest_tests[i].name, why_not_here);
            else run_test(guest_tests[i].name, guest_tests[i].f, ready);
        }
    }
    close_cpu_device(ctx, queue);
    return finish_tests();
}
