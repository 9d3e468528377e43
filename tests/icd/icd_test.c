/* C tests of the dmabridge OpenCL ICD, through the real loader (-lOpenCL,
 * OCL_ICD_VENDORS=<dmabridge.icd>), on the host's CPU device. Each test
 * function is one test; it fails if any of its checks fails. Closing line:
 * "N passed, N failed". */
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

static void *ext(const char *name) {
    return clGetExtensionFunctionAddressForPlatform(platform, name);
}

static void setup(void) {
    open_cpu_device(&platform, &device, NULL, NULL);
}

static void test_platform_info(void) {
    CHECK(platform != NULL);
    char s[512];
    size_t size = 0;
    CHECK_ERR(clGetPlatformInfo(platform, CL_PLATFORM_ICD_SUFFIX_KHR, sizeof s, s, &size), CL_SUCCESS);
    CHECK(strcmp(s, "DMABRIDGE") == 0 && size == strlen("DMABRIDGE") + 1);
    CHECK_ERR(clGetPlatformInfo(platform, CL_PLATFORM_EXTENSIONS, sizeof s, s, NULL), CL_SUCCESS);
    CHECK(strstr(s, "cl_khr_icd") != NULL);
    CHECK(strstr(s, "cl_intel_unified_shared_memory") != NULL);
    CHECK_ERR(clGetPlatformInfo(platform, CL_PLATFORM_PROFILE, sizeof s, s, NULL), CL_SUCCESS);
    CHECK(strcmp(s, "EMBEDDED_PROFILE") == 0);
    /* param_value_size rules: too small, size query, unknown name. */
    char small[4] = {'x', 'x', 'x', 'x'};
    CHECK_ERR(clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof small, small, NULL), CL_INVALID_VALUE);
    CHECK(small[0] == 'x');
    CHECK_ERR(clGetPlatformInfo(platform, CL_PLATFORM_NAME, 0, NULL, &size), CL_SUCCESS);
    CHECK(size == strlen("dmabridge") + 1);
    CHECK_ERR(clGetPlatformInfo(platform, 0x7fff, sizeof s, s, NULL), CL_INVALID_VALUE);
    /* Extension lookup: known, unknown, not UTF-8. */
    CHECK(ext("clHostMemAllocINTEL") != NULL);
    CHECK(ext("clNoSuchFunctionINTEL") == NULL);
    CHECK(ext("cl\xff\xfe") == NULL);
}

static void test_devices(void) {
    cl_uint n_all = 0, n = 0;
    CHECK_ERR(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, NULL, &n_all), CL_SUCCESS);
    CHECK(n_all >= 1);
    CHECK_ERR(clGetDeviceIDs(platform, CL_DEVICE_TYPE_DEFAULT, 0, NULL, &n), CL_SUCCESS);
    CHECK(n == 1);
    cl_device_id d = NULL;
    CHECK_ERR(clGetDeviceIDs(platform, CL_DEVICE_TYPE_CPU, 1, &d, NULL), CL_SUCCESS);
    CHECK(d == device);
    CHECK_ERR(clGetDeviceIDs(platform, CL_DEVICE_TYPE_GPU, 0, NULL, &n), CL_DEVICE_NOT_FOUND);
    CHECK_ERR(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, &d, &n), CL_INVALID_VALUE);
    CHECK_ERR(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(clGetDeviceIDs(platform, (cl_device_type)1 << 40, 1, &d, NULL), CL_INVALID_DEVICE_TYPE);
    cl_device_type t = 0;
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_TYPE, sizeof t, &t, NULL), CL_SUCCESS);
    CHECK(t & CL_DEVICE_TYPE_CPU);
    CHECK(!(t & CL_DEVICE_TYPE_CUSTOM));
    char s[256];
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_VERSION, sizeof s, s, NULL), CL_SUCCESS);
    CHECK(strncmp(s, "OpenCL 3.0", 10) == 0);
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_PROFILE, sizeof s, s, NULL), CL_SUCCESS);
    CHECK(strcmp(s, "EMBEDDED_PROFILE") == 0);
    cl_uint bits = 0;
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_ADDRESS_BITS, sizeof bits, &bits, NULL), CL_SUCCESS);
    CHECK(bits == 64);
    cl_platform_id p = NULL;
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof p, &p, NULL), CL_SUCCESS);
    CHECK(p == platform);
    cl_device_svm_capabilities svm = 0;
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_SVM_CAPABILITIES, sizeof svm, &svm, NULL), CL_SUCCESS);
    CHECK(svm & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER);
    cl_device_unified_shared_memory_capabilities_intel caps = 0;
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_HOST_MEM_CAPABILITIES_INTEL, sizeof caps, &caps, NULL), CL_SUCCESS);
    CHECK(caps & CL_UNIFIED_SHARED_MEMORY_ACCESS_INTEL);
    /* param_value_size rules. */
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_ADDRESS_BITS, 2, &bits, NULL), CL_INVALID_VALUE);
    CHECK_ERR(clGetDeviceInfo(device, 0x7fff, sizeof s, s, NULL), CL_INVALID_VALUE);
    /* Root devices: retain/release succeed; a bad handle does not. */
    CHECK_ERR(clRetainDevice(device), CL_SUCCESS);
    CHECK_ERR(clReleaseDevice(device), CL_SUCCESS);
}

static void test_context_queue_event(void) {
    cl_int err = 1;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)platform, 0};
    cl_context ctx = clCreateContext(props, 1, &device, NULL, NULL, &err);
    CHECK(ctx != NULL && err == CL_SUCCESS);
    cl_context_properties got[3] = {0};
    size_t size = 0;
    CHECK_ERR(clGetContextInfo(ctx, CL_CONTEXT_PROPERTIES, sizeof got, got, &size), CL_SUCCESS);
    CHECK(size == sizeof props && got[1] == (cl_context_properties)platform);
    cl_device_id d = NULL;
    CHECK_ERR(clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof d, &d, NULL), CL_SUCCESS);
    CHECK(d == device);
    cl_context bad = clCreateContext(NULL, 0, &device, NULL, NULL, &err);
    CHECK(bad == NULL && err == CL_INVALID_VALUE);
    cl_context_properties badp[] = {0x7777, 1, 0};
    bad = clCreateContext(badp, 1, &device, NULL, NULL, &err);
    CHECK(bad == NULL && err == CL_INVALID_PROPERTY);
    cl_context ctx2 = clCreateContextFromType(NULL, CL_DEVICE_TYPE_DEFAULT, NULL, NULL, &err);
    CHECK(ctx2 != NULL && err == CL_SUCCESS);
    CHECK_ERR(clReleaseContext(ctx2), CL_SUCCESS);

    cl_queue_properties qp[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, device, qp, &err);
    CHECK(q != NULL && err == CL_SUCCESS);
    cl_command_queue q1 = clCreateCommandQueue(ctx, device, 0, &err);
    CHECK(q1 != NULL && err == CL_SUCCESS);
    CHECK_ERR(clReleaseCommandQueue(q1), CL_SUCCESS);
    cl_context qc = NULL;
    CHECK_ERR(clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof qc, &qc, NULL), CL_SUCCESS);
    CHECK(qc == ctx);
    cl_uint refs = 0;
    CHECK_ERR(clGetCommandQueueInfo(q, CL_QUEUE_REFERENCE_COUNT, sizeof refs, &refs, NULL), CL_SUCCESS);
    CHECK(refs == 1);

    /* Markers, user events, callbacks, profiling. */
    cl_event user = clCreateUserEvent(ctx, &err);
    CHECK(user != NULL && err == CL_SUCCESS);
    cl_event marker = NULL;
    CHECK_ERR(clEnqueueMarkerWithWaitList(q, 1, &user, &marker), CL_SUCCESS);
    cl_int st = 99;
    CHECK_ERR(clGetEventInfo(marker, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL), CL_SUCCESS);
    CHECK(st != CL_COMPLETE);
    cl_command_queue eq = NULL;
    CHECK_ERR(clGetEventInfo(marker, CL_EVENT_COMMAND_QUEUE, sizeof eq, &eq, NULL), CL_SUCCESS);
    CHECK(eq == q);
    CHECK_ERR(clGetEventInfo(user, CL_EVENT_COMMAND_QUEUE, sizeof eq, &eq, NULL), CL_SUCCESS);
    CHECK(eq == NULL);
    CHECK_ERR(clSetUserEventStatus(user, CL_COMPLETE), CL_SUCCESS);
    CHECK_ERR(clSetUserEventStatus(user, CL_COMPLETE), CL_INVALID_OPERATION);
    CHECK_ERR(clWaitForEvents(1, &marker), CL_SUCCESS);
    cl_ulong start = 0, end = 0;
    CHECK_ERR(clGetEventProfilingInfo(marker, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL), CL_SUCCESS);
    CHECK_ERR(clGetEventProfilingInfo(marker, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL), CL_SUCCESS);
    CHECK(end >= start);
    CHECK_ERR(clGetEventProfilingInfo(user, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL),
              CL_PROFILING_INFO_NOT_AVAILABLE);
    CHECK_ERR(clFlush(q), CL_SUCCESS);
    CHECK_ERR(clFinish(q), CL_SUCCESS);

    /* The context stays valid through the queue after its release. */
    CHECK_ERR(clRetainContext(ctx), CL_SUCCESS);
    CHECK_ERR(clReleaseContext(ctx), CL_SUCCESS);
    CHECK_ERR(clReleaseEvent(marker), CL_SUCCESS);
    CHECK_ERR(clReleaseEvent(user), CL_SUCCESS);
    CHECK_ERR(clReleaseContext(ctx), CL_SUCCESS);
    CHECK_ERR(clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof qc, &qc, NULL), CL_SUCCESS);
    CHECK(qc == ctx);
    CHECK_ERR(clGetContextInfo(ctx, CL_CONTEXT_REFERENCE_COUNT, sizeof refs, &refs, NULL), CL_SUCCESS);
    CHECK(refs == 1);
    CHECK_ERR(clReleaseContext(ctx), CL_INVALID_CONTEXT); /* the application owns no reference */
    CHECK_ERR(clReleaseCommandQueue(q), CL_SUCCESS);
}

static int callback_calls;
static cl_int callback_status = 99;
static void CL_CALLBACK on_complete(cl_event ev, cl_int status, void *data) {
    /* Calls back into the API from the callback. */
    cl_int st = 99;
    clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
    callback_status = st;
    callback_calls += *(int *)data + (status == CL_COMPLETE ? 0 : 100);
}

static void test_callbacks(void) {
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    cl_event user = clCreateUserEvent(ctx, &err);
    static int one = 1;
    CHECK_ERR(clSetEventCallback(user, CL_COMPLETE, on_complete, &one), CL_SUCCESS);
    CHECK_ERR(clSetEventCallback(user, CL_COMPLETE, NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(clSetEventCallback(user, 42, on_complete, &one), CL_INVALID_VALUE);
    CHECK(callback_calls == 0);
    CHECK_ERR(clSetUserEventStatus(user, CL_COMPLETE), CL_SUCCESS);
    CHECK(callback_calls == 1 && callback_status == CL_COMPLETE);
    /* Released before its callback: the callback still gets a live handle. */
    cl_event user2 = clCreateUserEvent(ctx, &err);
    CHECK_ERR(clSetEventCallback(user2, CL_COMPLETE, on_complete, &one), CL_SUCCESS);
    CHECK_ERR(clRetainEvent(user2), CL_SUCCESS);
    CHECK_ERR(clReleaseEvent(user2), CL_SUCCESS);
    CHECK_ERR(clSetUserEventStatus(user2, CL_COMPLETE), CL_SUCCESS);
    CHECK(callback_calls == 2);
    CHECK_ERR(clReleaseEvent(user2), CL_SUCCESS);
    CHECK_ERR(clReleaseEvent(user), CL_SUCCESS);
    CHECK_ERR(clReleaseContext(ctx), CL_SUCCESS);
}

static void test_handles(void) {
    cl_int err = 0;
    /* NULL handles. */
    CHECK_ERR(clRetainContext(NULL), CL_INVALID_CONTEXT);
    CHECK_ERR(clReleaseCommandQueue(NULL), CL_INVALID_COMMAND_QUEUE);
    CHECK_ERR(clWaitForEvents(0, NULL), CL_INVALID_VALUE);
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, NULL, NULL, &err);
    CHECK(q == NULL && err == CL_INVALID_DEVICE);
    q = clCreateCommandQueueWithProperties(ctx, device, NULL, &err);
    cl_event user = clCreateUserEvent(ctx, &err);
    /* Wrong kinds: a queue where a context is expected, and so on. The
       loader dispatches on the first word; dmabridge checks the kind. */
    CHECK_ERR(clRetainContext((cl_context)q), CL_INVALID_CONTEXT);
    CHECK_ERR(clFinish((cl_command_queue)ctx), CL_INVALID_COMMAND_QUEUE);
    CHECK_ERR(clSetUserEventStatus((cl_event)q, CL_COMPLETE), CL_INVALID_EVENT);
    cl_event not_event = (cl_event)ctx;
    CHECK_ERR(clWaitForEvents(1, &not_event), CL_INVALID_EVENT);
    /* Released handles (their headers stay readable, with the dispatch
       pointer the loader reads; the registry answers; stale_handles_test.c
       checks the same after heavy churn). */
    CHECK_ERR(clSetUserEventStatus(user, CL_COMPLETE), CL_SUCCESS);
    CHECK_ERR(clReleaseEvent(user), CL_SUCCESS);
    CHECK_ERR(clReleaseEvent(user), CL_INVALID_EVENT);
    CHECK_ERR(clWaitForEvents(1, &user), CL_INVALID_EVENT);
    CHECK_ERR(clReleaseCommandQueue(q), CL_SUCCESS);
    CHECK_ERR(clFinish(q), CL_INVALID_COMMAND_QUEUE);
    CHECK_ERR(clReleaseContext(ctx), CL_SUCCESS);
    CHECK_ERR(clReleaseContext(ctx), CL_INVALID_CONTEXT);
    CHECK(clCreateUserEvent(ctx, &err) == NULL && err == CL_INVALID_CONTEXT);
    /* Entry points not implemented yet answer errors, never crash. */
    cl_context live = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK(clCreatePipe(live, 0, 4, 16, NULL, &err) == NULL && err == CL_INVALID_OPERATION);
    CHECK(clCreateProgramWithIL(live, "x", 1, &err) == NULL && err == CL_INVALID_OPERATION);
    CHECK_ERR(clReleaseContext(live), CL_SUCCESS);
    CHECK_ERR(clReleaseMemObject(NULL), CL_INVALID_MEM_OBJECT);
    CHECK_ERR(clBuildProgram(NULL, 0, NULL, NULL, NULL, NULL), CL_INVALID_PROGRAM);
}

static void test_wait_lists(void) {
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, device, NULL, &err);
    cl_event user = clCreateUserEvent(ctx, &err);
    cl_event ev = NULL;
    CHECK_ERR(clEnqueueMarkerWithWaitList(q, 1, NULL, &ev), CL_INVALID_EVENT_WAIT_LIST);
    CHECK_ERR(clEnqueueMarkerWithWaitList(q, 0, &user, &ev), CL_INVALID_EVENT_WAIT_LIST);
    cl_event bogus = (cl_event)q;
    CHECK_ERR(clEnqueueBarrierWithWaitList(q, 1, &bogus, &ev), CL_INVALID_EVENT_WAIT_LIST);
    CHECK(ev == NULL);
    /* An event of another context. */
    cl_context other = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    cl_event foreign = clCreateUserEvent(other, &err);
    CHECK_ERR(clEnqueueMarkerWithWaitList(q, 1, &foreign, &ev), CL_INVALID_CONTEXT);
    CHECK_ERR(clSetUserEventStatus(user, CL_COMPLETE), CL_SUCCESS);
    CHECK_ERR(clEnqueueBarrierWithWaitList(q, 1, &user, NULL), CL_SUCCESS);
    CHECK_ERR(clFinish(q), CL_SUCCESS);
    clReleaseEvent(foreign);
    clReleaseEvent(user);
    clReleaseContext(other);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
}

static void test_usm(void) {
    clHostMemAllocINTEL_fn host_alloc = EXT_FN(platform, clHostMemAllocINTEL);
    clDeviceMemAllocINTEL_fn dev_alloc = EXT_FN(platform, clDeviceMemAllocINTEL);
    clSharedMemAllocINTEL_fn shared_alloc = EXT_FN(platform, clSharedMemAllocINTEL);
    clMemFreeINTEL_fn mem_free = EXT_FN(platform, clMemFreeINTEL);
    clMemBlockingFreeINTEL_fn blocking_free = EXT_FN(platform, clMemBlockingFreeINTEL);
    clGetMemAllocInfoINTEL_fn alloc_info = EXT_FN(platform, clGetMemAllocInfoINTEL);
    clEnqueueMemFillINTEL_fn fill = EXT_FN(platform, clEnqueueMemFillINTEL);
    clEnqueueMemcpyINTEL_fn memcpy_ = EXT_FN(platform, clEnqueueMemcpyINTEL);
    clEnqueueMigrateMemINTEL_fn migrate = EXT_FN(platform, clEnqueueMigrateMemINTEL);
    clEnqueueMemAdviseINTEL_fn advise = EXT_FN(platform, clEnqueueMemAdviseINTEL);
    CHECK(host_alloc && dev_alloc && shared_alloc && mem_free && blocking_free && alloc_info && fill && memcpy_ &&
          migrate && advise);
    if (!(host_alloc && dev_alloc && shared_alloc && mem_free && blocking_free && alloc_info && fill && memcpy_ &&
          migrate && advise))
        return;
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, device, NULL, &err);
    unsigned char *h = host_alloc(ctx, NULL, 4096, 0, &err);
    CHECK(h != NULL && err == CL_SUCCESS);
    unsigned char *d = dev_alloc(ctx, device, NULL, 4096, 64, &err);
    CHECK(d != NULL && err == CL_SUCCESS);
    /* A pattern size near SIZE_MAX is CL_INVALID_VALUE, read nowhere (it
       aborted the process: found by fuzz_test). */
    cl_uint big_pat = 7;
    CHECK_ERR(fill(q, h, &big_pat, SIZE_MAX - 3, 16, 0, NULL, NULL), CL_INVALID_VALUE);
    cl_mem_properties_intel sp[] = {CL_MEM_ALLOC_FLAGS_INTEL, CL_MEM_ALLOC_INITIAL_PLACEMENT_HOST_INTEL, 0};
    unsigned char *s = shared_alloc(ctx, NULL, sp, 4096, 0, &err);
    CHECK(s != NULL && err == CL_SUCCESS);
    /* Errors of the allocation functions. */
    CHECK(host_alloc(ctx, NULL, 0, 0, &err) == NULL && err == CL_INVALID_BUFFER_SIZE);
    CHECK(host_alloc(ctx, NULL, 64, 3, &err) == NULL && err == CL_INVALID_VALUE);
    CHECK(host_alloc(NULL, NULL, 64, 0, &err) == NULL && err == CL_INVALID_CONTEXT);
    CHECK(dev_alloc(ctx, NULL, NULL, 64, 0, &err) == NULL && err == CL_INVALID_DEVICE);
    cl_mem_properties_intel badp[] = {0x1234, 0, 0};
    CHECK(host_alloc(ctx, badp, 64, 0, &err) == NULL && err == CL_INVALID_PROPERTY);
    /* Fill, copy, migrate, advise. */
    cl_uint pattern = 0xdeadbeef;
    cl_event ev = NULL;
    CHECK_ERR(fill(q, h, &pattern, sizeof pattern, 4096, 0, NULL, &ev), CL_SUCCESS);
    CHECK_ERR(memcpy_(q, CL_TRUE, d, h, 4096, 1, &ev, NULL), CL_SUCCESS);
    CHECK_ERR(memcpy_(q, CL_TRUE, s, d, 4096, 0, NULL, NULL), CL_SUCCESS);
    cl_uint first;
    memcpy(&first, s + 4092, 4);
    CHECK(first == 0xdeadbeef);
    cl_command_type ct = 0;
    CHECK_ERR(clGetEventInfo(ev, CL_EVENT_COMMAND_TYPE, sizeof ct, &ct, NULL), CL_SUCCESS);
    CHECK(ct == CL_COMMAND_MEMFILL_INTEL);
    clReleaseEvent(ev);
    CHECK_ERR(fill(q, h + 1, &pattern, sizeof pattern, 16, 0, NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(fill(q, h, NULL, 4, 16, 0, NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(fill(q, h, &pattern, 3, 12, 0, NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(memcpy_(q, CL_TRUE, NULL, h, 16, 0, NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(memcpy_(q, CL_TRUE, h, h + 8, 16, 0, NULL, NULL), CL_MEM_COPY_OVERLAP);
    CHECK_ERR(memcpy_(NULL, CL_TRUE, h, d, 16, 0, NULL, NULL), CL_INVALID_COMMAND_QUEUE);
    CHECK_ERR(memcpy_(q, CL_TRUE, h, d, 16, 1, NULL, NULL), CL_INVALID_EVENT_WAIT_LIST);
    CHECK_ERR(migrate(q, s, 4096, CL_MIGRATE_MEM_OBJECT_HOST, 0, NULL, NULL), CL_SUCCESS);
    CHECK_ERR(migrate(q, s, 4097, CL_MIGRATE_MEM_OBJECT_HOST, 0, NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(advise(q, s, 4096, 0, 0, NULL, NULL), CL_SUCCESS);
    CHECK_ERR(advise(q, s, 4096, 1, 0, NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(clFinish(q), CL_SUCCESS);
    /* Allocation queries. */
    cl_unified_shared_memory_type_intel type = 0;
    CHECK_ERR(alloc_info(ctx, d + 10, CL_MEM_ALLOC_TYPE_INTEL, sizeof type, &type, NULL), CL_SUCCESS);
    CHECK(type == CL_MEM_TYPE_DEVICE_INTEL);
    void *base = NULL;
    CHECK_ERR(alloc_info(ctx, d + 10, CL_MEM_ALLOC_BASE_PTR_INTEL, sizeof base, &base, NULL), CL_SUCCESS);
    CHECK(base == d);
    cl_device_id owner = NULL;
    CHECK_ERR(alloc_info(ctx, d, CL_MEM_ALLOC_DEVICE_INTEL, sizeof owner, &owner, NULL), CL_SUCCESS);
    CHECK(owner == device);
    size_t size = 0;
    CHECK_ERR(alloc_info(ctx, h, CL_MEM_ALLOC_SIZE_INTEL, sizeof size, &size, NULL), CL_SUCCESS);
    CHECK(size == 4096);
    int stack;
    CHECK_ERR(alloc_info(ctx, &stack, CL_MEM_ALLOC_TYPE_INTEL, sizeof type, &type, NULL), CL_SUCCESS);
    CHECK(type == CL_MEM_TYPE_UNKNOWN_INTEL);
    CHECK_ERR(alloc_info(ctx, h, CL_MEM_ALLOC_TYPE_INTEL, 2, &type, NULL), CL_INVALID_VALUE);
    /* Frees. */
    CHECK_ERR(mem_free(ctx, h + 1), CL_INVALID_VALUE);
    CHECK_ERR(mem_free(ctx, h), CL_SUCCESS);
    CHECK_ERR(mem_free(ctx, h), CL_INVALID_VALUE);
    CHECK_ERR(mem_free(ctx, NULL), CL_SUCCESS);
    CHECK_ERR(blocking_free(ctx, d), CL_SUCCESS);
    CHECK_ERR(mem_free(NULL, s), CL_INVALID_CONTEXT);
    CHECK_ERR(mem_free(ctx, s), CL_SUCCESS);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
}

static int svm_free_calls;
static void CL_CALLBACK on_svm_free(cl_command_queue q, cl_uint n, void **ptrs, void *data) {
    cl_context ctx = (cl_context)data;
    for (cl_uint i = 0; i < n; i++) clSVMFree(ctx, ptrs[i]);
    svm_free_calls += (int)n + (q != NULL ? 0 : 100);
}

static void test_svm(void) {
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, device, NULL, &err);
    unsigned char *a = clSVMAlloc(ctx, CL_MEM_READ_WRITE, 4096, 0);
    unsigned char *b = clSVMAlloc(ctx, CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER, 4096, 0);
    CHECK(a != NULL && b != NULL);
    CHECK(clSVMAlloc(ctx, CL_MEM_READ_WRITE, 0, 0) == NULL);
    CHECK(clSVMAlloc(NULL, CL_MEM_READ_WRITE, 64, 0) == NULL);
    CHECK(clSVMAlloc(ctx, CL_MEM_READ_WRITE, 64, 3) == NULL);
    unsigned short pat = 0x1234;
    CHECK_ERR(clEnqueueSVMMemFill(q, a, &pat, SIZE_MAX - 1, 4096, 0, NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(clEnqueueSVMMemFill(q, a, &pat, sizeof pat, 4096, 0, NULL, NULL), CL_SUCCESS);
    CHECK_ERR(clEnqueueSVMMemcpy(q, CL_TRUE, b, a, 4096, 0, NULL, NULL), CL_SUCCESS);
    CHECK(b[4094] == 0x34 && b[4095] == 0x12);
    CHECK_ERR(clEnqueueSVMMap(q, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, a, 4096, 0, NULL, NULL), CL_SUCCESS);
    CHECK_ERR(clEnqueueSVMUnmap(q, a, 0, NULL, NULL), CL_SUCCESS);
    CHECK_ERR(clEnqueueSVMMap(q, CL_TRUE, CL_MAP_READ, NULL, 4096, 0, NULL, NULL), CL_INVALID_VALUE);
    const void *ptrs[] = {a};
    CHECK_ERR(clEnqueueSVMMigrateMem(q, 1, ptrs, NULL, CL_MIGRATE_MEM_OBJECT_HOST, 0, NULL, NULL), CL_SUCCESS);
    CHECK_ERR(clEnqueueSVMMigrateMem(q, 0, NULL, NULL, 0, 0, NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(clEnqueueSVMMemcpy(q, CL_TRUE, a, a + 8, 64, 0, NULL, NULL), CL_MEM_COPY_OVERLAP);
    void *frees[] = {a, b};
    cl_event ev = NULL;
    CHECK_ERR(clEnqueueSVMFree(q, 2, frees, on_svm_free, ctx, 0, NULL, &ev), CL_SUCCESS);
    CHECK_ERR(clWaitForEvents(1, &ev), CL_SUCCESS);
    CHECK(svm_free_calls == 2);
    clReleaseEvent(ev);
    CHECK_ERR(clEnqueueSVMFree(q, 1, NULL, NULL, NULL, 0, NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(clEnqueueSVMFree(q, 0, frees, NULL, NULL, 0, NULL, NULL), CL_INVALID_VALUE);
    /* No count and no list: a valid command that frees nothing. */
    CHECK_ERR(clEnqueueSVMFree(q, 0, NULL, NULL, NULL, 0, NULL, &ev), CL_SUCCESS);
    CHECK_ERR(clWaitForEvents(1, &ev), CL_SUCCESS);
    clReleaseEvent(ev);
    clSVMFree(ctx, NULL);
    clSVMFree(NULL, a); /* ignored */
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
}

int main(void) {
    setup();
    static const struct test_case tests[] = {
        {"platform_info", test_platform_info},
        {"devices", test_devices},
        {"context_queue_event", test_context_queue_event},
        {"callbacks", test_callbacks},
        {"handles", test_handles},
        {"wait_lists", test_wait_lists},
        {"usm", test_usm},
        {"svm", test_svm},
    };
    int ready = platform && device;
    RUN_TESTS(tests, ready);
    return finish_tests();
}
