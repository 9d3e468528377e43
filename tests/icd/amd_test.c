/* C tests of cl_amd_bus_addressable_memory (include/CL/cl_amd_bus.h: AMD's
 * header order) through the real loader (-lOpenCL,
 * OCL_ICD_VENDORS=<dmabridge.icd>):
 *  - everywhere: the entry points resolve through
 *    clGetExtensionFunctionAddressForPlatform; clCreateBuffer's flag rules;
 *    every error code of the three entry points; the extension string is
 *    listed exactly where buffers can be made resident;
 *  - where it is listed (the QEMU guest: make test-guest-icd): buffers made
 *    resident (bus addresses, the event's command type), a wait-signal whose
 *    value is already there and ones a fresh signal page has not reached,
 *    an external physical buffer on the ivshmem BAR (found through sysfs)
 *    written and signalled, and its refusals.
 * Closing line: "N passed, N failed". */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <CL/cl_amd_bus.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "check.h"

static cl_platform_id platform;
static cl_device_id device;
static cl_context ctx;
static cl_command_queue queue;
static clEnqueueWaitSignalAMD_fn wait_signal;
static clEnqueueWriteSignalAMD_fn write_signal;
static clEnqueueMakeBuffersResidentAMD_fn resident;
static int advertised;

static void setup(void) {
    open_cpu_device(&platform, &device, &ctx, &queue);
    if (!queue) return;
    wait_signal = EXT_FN(platform, clEnqueueWaitSignalAMD);
    write_signal = EXT_FN(platform, clEnqueueWriteSignalAMD);
    resident = EXT_FN(platform, clEnqueueMakeBuffersResidentAMD);
    char ext[4096] = {0};
    clGetPlatformInfo(platform, CL_PLATFORM_EXTENSIONS, sizeof ext, ext, NULL);
    advertised = has_word(ext, "cl_amd_bus_addressable_memory");
}

static cl_mem bus_buffer(size_t size) {
    cl_int err = 1;
    cl_mem b = clCreateBuffer(ctx, CL_MEM_BUS_ADDRESSABLE_AMD, size, NULL, &err);
    CHECK(b != NULL && err == CL_SUCCESS);
    return b;
}

static void test_create_flags(void) {
    cl_int err = 1;
    char data[64] = {1};
    CHECK(clCreateBuffer(ctx, CL_MEM_BUS_ADDRESSABLE_AMD | CL_MEM_USE_HOST_PTR, 64, data, &err) == NULL &&
          err == CL_INVALID_VALUE);
    CHECK(clCreateBuffer(ctx, CL_MEM_BUS_ADDRESSABLE_AMD | CL_MEM_ALLOC_HOST_PTR, 64, NULL, &err) == NULL &&
          err == CL_INVALID_VALUE);
    CHECK(clCreateBuffer(ctx, CL_MEM_BUS_ADDRESSABLE_AMD | CL_MEM_EXTERNAL_PHYSICAL_AMD, 64, NULL, &err) == NULL &&
          err == CL_INVALID_VALUE);
    cl_bus_address_amd at = {0x10000000, 0x10001000};
    CHECK(clCreateBuffer(ctx, CL_MEM_EXTERNAL_PHYSICAL_AMD | CL_MEM_READ_WRITE, 4096, &at, &err) == NULL &&
          err == CL_INVALID_VALUE);
    CHECK(clCreateBuffer(ctx, CL_MEM_EXTERNAL_PHYSICAL_AMD | CL_MEM_COPY_HOST_PTR, 4096, &at, &err) == NULL &&
          err == CL_INVALID_VALUE);
    CHECK(clCreateBuffer(ctx, CL_MEM_EXTERNAL_PHYSICAL_AMD, 4096, NULL, &err) == NULL && err == CL_INVALID_HOST_PTR);
    cl_bus_address_amd zero = {0, 0x10001000}, unaligned = {0x10000000, 0x10001008};
    CHECK(clCreateBuffer(ctx, CL_MEM_EXTERNAL_PHYSICAL_AMD, 4096, &zero, &err) == NULL && err == CL_INVALID_HOST_PTR);
    CHECK(clCreateBuffer(ctx, CL_MEM_EXTERNAL_PHYSICAL_AMD, 4096, &unaligned, &err) == NULL &&
          err == CL_INVALID_HOST_PTR);
    /* Bus addresses in no PCI BAR cannot be mapped. */
    cl_bus_address_amd nowhere = {0x7ffffffff000ull, 0x7fffffffe000ull};
    CHECK(clCreateBuffer(ctx, CL_MEM_EXTERNAL_PHYSICAL_AMD, 4096, &nowhere, &err) == NULL &&
          err == CL_MEM_OBJECT_ALLOCATION_FAILURE);

    /* COPY_HOST_PTR initialises a bus-addressable buffer; its flags say what
       it is; it has no sub-buffers. */
    cl_mem b = clCreateBuffer(ctx, CL_MEM_BUS_ADDRESSABLE_AMD | CL_MEM_COPY_HOST_PTR, 64, data, &err);
    CHECK(b != NULL && err == CL_SUCCESS);
    cl_mem_flags flags = 0;
    CHECK_ERR(clGetMemObjectInfo(b, CL_MEM_FLAGS, sizeof flags, &flags, NULL), CL_SUCCESS);
    CHECK(flags & CL_MEM_BUS_ADDRESSABLE_AMD);
    char back[64] = {0};
    CHECK_ERR(clEnqueueReadBuffer(queue, b, CL_TRUE, 0, 64, back, 0, NULL, NULL), CL_SUCCESS);
    CHECK(memcmp(back, data, 64) == 0);
    cl_buffer_region r = {0, 32};
    CHECK(clCreateSubBuffer(b, 0, CL_BUFFER_CREATE_TYPE_REGION, &r, &err) == NULL && err == CL_INVALID_MEM_OBJECT);
    clReleaseMemObject(b);
}

static void test_entry_point_errors(void) {
    CHECK(wait_signal != NULL && write_signal != NULL && resident != NULL);
    if (!wait_signal || !write_signal || !resident) return;
    cl_int err;
    cl_mem plain = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4096, NULL, &err);
    cl_mem b = bus_buffer(4096);
    cl_bus_address_amd at[2] = {{0, 0}, {0, 0}};
    cl_event ev = (cl_event)(uintptr_t)0x1234; /* must stay untouched by failures */
    /* clEnqueueMakeBuffersResidentAMD */
    CHECK_ERR(resident(queue, 1, NULL, CL_TRUE, at, 0, NULL, &ev), CL_INVALID_OPERATION);
    CHECK_ERR(resident(queue, 1, &b, CL_TRUE, NULL, 0, NULL, &ev), CL_INVALID_OPERATION);
    cl_mem mixed[2] = {b, plain};
    CHECK_ERR(resident(queue, 2, mixed, CL_TRUE, at, 0, NULL, &ev), CL_INVALID_OPERATION);
    cl_mem not_mem[1] = {(cl_mem)ctx};
    CHECK_ERR(resident(queue, 1, not_mem, CL_TRUE, at, 0, NULL, &ev), CL_INVALID_OPERATION);
    CHECK_ERR(resident(queue, 0, NULL, CL_TRUE, NULL, 0, NULL, &ev), CL_INVALID_VALUE);
    CHECK_ERR(resident(NULL, 1, &b, CL_TRUE, at, 0, NULL, &ev), CL_INVALID_COMMAND_QUEUE);
    CHECK_ERR(resident(queue, 1, &b, CL_TRUE, at, 1, NULL, &ev), CL_INVALID_EVENT_WAIT_LIST);
    if (!advertised) {
        /* No IOMMU domain here: nothing can be made resident. */
        CHECK_ERR(resident(queue, 1, &b, CL_TRUE, at, 0, NULL, &ev), CL_OUT_OF_HOST_MEMORY);
        CHECK(at[0].surface_bus_address == 0 && at[0].marker_bus_address == 0);
    }
    CHECK(ev == (cl_event)(uintptr_t)0x1234);
    /* clEnqueueWaitSignalAMD */
    CHECK_ERR(wait_signal(queue, plain, 1, 0, NULL, NULL), CL_INVALID_MEM_OBJECT);
    CHECK_ERR(wait_signal(queue, (cl_mem)queue, 1, 0, NULL, NULL), CL_INVALID_MEM_OBJECT);
    CHECK_ERR(wait_signal(NULL, b, 1, 0, NULL, NULL), CL_INVALID_COMMAND_QUEUE);
    CHECK_ERR(wait_signal((cl_command_queue)ctx, b, 1, 0, NULL, NULL), CL_INVALID_COMMAND_QUEUE);
    cl_mem fresh = bus_buffer(64);
    CHECK_ERR(wait_signal(queue, fresh, 1, 0, NULL, &ev), CL_INVALID_VALUE); /* never resident: signal address 0 */
    /* clEnqueueWriteSignalAMD */
    CHECK_ERR(write_signal(queue, b, 1, 0, 0, NULL, NULL), CL_INVALID_MEM_OBJECT);
    CHECK_ERR(write_signal(queue, plain, 1, 0, 0, NULL, NULL), CL_INVALID_MEM_OBJECT);
    CHECK_ERR(write_signal(NULL, b, 1, 0, 0, NULL, NULL), CL_INVALID_COMMAND_QUEUE);
    cl_command_queue q2 = clCreateCommandQueueWithProperties(ctx, device, NULL, &err);
    CHECK_ERR(clReleaseCommandQueue(q2), CL_SUCCESS);
    CHECK_ERR(wait_signal(q2, b, 1, 0, NULL, NULL), CL_INVALID_COMMAND_QUEUE);
    CHECK(ev == (cl_event)(uintptr_t)0x1234);
    clReleaseMemObject(fresh);
    clReleaseMemObject(b);
    clReleaseMemObject(plain);
}

static void test_advertised_where_it_works(void) {
    char ext[4096] = {0};
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, sizeof ext, ext, NULL), CL_SUCCESS);
    CHECK(has_word(ext, "cl_amd_bus_addressable_memory") == advertised);
    if (advertised) return; /* the guest tests below show it working */
    cl_mem b = bus_buffer(4096);
    cl_bus_address_amd at = {0, 0};
    CHECK_ERR(resident(queue, 1, &b, CL_FALSE, &at, 0, NULL, NULL), CL_OUT_OF_HOST_MEMORY);
    clReleaseMemObject(b);
}

static void test_resident_and_wait(void) {
    cl_mem bufs[2] = {bus_buffer(8192), bus_buffer(100)};
    cl_bus_address_amd at[2] = {{0, 0}, {0, 0}};
    cl_event ev = NULL;
    CHECK_ERR(resident(queue, 2, bufs, CL_FALSE, at, 0, NULL, &ev), CL_SUCCESS);
    for (int i = 0; i < 2; i++) CHECK(at[i].surface_bus_address != 0 && at[i].marker_bus_address != 0);
    CHECK(at[0].surface_bus_address != at[1].surface_bus_address);
    cl_command_type type = 0;
    CHECK_ERR(clGetEventInfo(ev, CL_EVENT_COMMAND_TYPE, sizeof type, &type, NULL), CL_SUCCESS);
    CHECK(type == CL_COMMAND_MAKE_BUFFERS_RESIDENT_AMD);
    CHECK_ERR(clWaitForEvents(1, &ev), CL_SUCCESS);
    clReleaseEvent(ev);
    /* Again, blocking: the same addresses. */
    cl_bus_address_amd again[2];
    CHECK_ERR(resident(queue, 2, bufs, CL_TRUE, again, 0, NULL, NULL), CL_SUCCESS);
    CHECK(memcmp(again, at, sizeof at) == 0);
    /* Signals start at 0: a wait for 0 is over at once. */
    ev = NULL;
    CHECK_ERR(wait_signal(queue, bufs[0], 0, 0, NULL, &ev), CL_SUCCESS);
    CHECK_ERR(clWaitForEvents(1, &ev), CL_SUCCESS);
    CHECK_ERR(clGetEventInfo(ev, CL_EVENT_COMMAND_TYPE, sizeof type, &type, NULL), CL_SUCCESS);
    CHECK(type == CL_COMMAND_WAIT_SIGNAL_AMD);
    clReleaseEvent(ev);
    /* ... and a wait for any value above 0 is not: 0 has not reached
       0x80000001 (nor 0xffffffff; markers never wrap). It holds its queue
       until the queue is released. */
    cl_uint above[2] = {0x80000001u, 0xffffffffu};
    for (int i = 0; i < 2; i++) {
        cl_int err;
        cl_command_queue q2 = clCreateCommandQueueWithProperties(ctx, device, NULL, &err);
        ev = NULL;
        CHECK_ERR(wait_signal(q2, bufs[i], above[i], 0, NULL, &ev), CL_SUCCESS);
        CHECK_ERR(clFlush(q2), CL_SUCCESS);
        struct timespec ms200 = {0, 200 * 1000 * 1000};
        nanosleep(&ms200, NULL);
        cl_int st = CL_COMPLETE;
        CHECK_ERR(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL), CL_SUCCESS);
        if (st == CL_COMPLETE) fprintf(stderr, "  a fresh signal page (0) ended the wait for %#x\n", above[i]);
        CHECK(st != CL_COMPLETE && st >= 0);
        clReleaseEvent(ev);
        CHECK_ERR(clReleaseCommandQueue(q2), CL_SUCCESS); /* ends the wait */
    }
    for (int i = 0; i < 2; i++) clReleaseMemObject(bufs[i]);
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

static void test_external_physical_on_ivshmem(void) {
    cl_ulong bar = ivshmem_bar2();
    CHECK(bar != 0);
    if (!bar) return;
    cl_int err = 1;
    cl_bus_address_amd at = {bar + 0x300000, bar + 0x380000};
    cl_mem x = clCreateBuffer(ctx, CL_MEM_EXTERNAL_PHYSICAL_AMD | CL_MEM_WRITE_ONLY, 4096, &at, &err);
    CHECK(x != NULL && err == CL_SUCCESS);
    if (!x) return;
    CHECK(clCreateBuffer(ctx, CL_MEM_EXTERNAL_PHYSICAL_AMD, 4096, &at, &err) == NULL && err == CL_OUT_OF_RESOURCES);
    char data[4096];
    for (int i = 0; i < 4096; i++) data[i] = (char)(i * 7);
    CHECK_ERR(clEnqueueWriteBuffer(queue, x, CL_FALSE, 0, sizeof data, data, 0, NULL, NULL), CL_SUCCESS);
    cl_event ev = NULL;
    CHECK_ERR(write_signal(queue, x, 1, 0, 0, NULL, &ev), CL_SUCCESS);
    CHECK_ERR(clWaitForEvents(1, &ev), CL_SUCCESS);
    cl_command_type type = 0;
    CHECK_ERR(clGetEventInfo(ev, CL_EVENT_COMMAND_TYPE, sizeof type, &type, NULL), CL_SUCCESS);
    CHECK(type == CL_COMMAND_WRITE_SIGNAL_AMD);
    clReleaseEvent(ev);
    CHECK_ERR(write_signal(queue, x, 1, 0, 0, NULL, NULL), CL_INVALID_VALUE);    /* markers keep increasing */
    CHECK_ERR(write_signal(queue, x, 2, 4094, 0, NULL, NULL), CL_INVALID_BUFFER_SIZE);
    CHECK_ERR(write_signal(queue, x, 2, UINT64_MAX - 3, 0, NULL, NULL), CL_INVALID_BUFFER_SIZE); /* no wrap */
    CHECK_ERR(write_signal(queue, x, 2, UINT64_MAX, 0, NULL, NULL), CL_INVALID_BUFFER_SIZE);
    char back[16];
    CHECK_ERR(clEnqueueReadBuffer(queue, x, CL_TRUE, 0, 16, back, 0, NULL, NULL), CL_INVALID_OPERATION);
    CHECK(clEnqueueMapBuffer(queue, x, CL_TRUE, CL_MAP_WRITE, 0, 16, 0, NULL, NULL, &err) == NULL &&
          err == CL_INVALID_OPERATION);
    cl_mem plain = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4096, NULL, &err);
    CHECK_ERR(clEnqueueCopyBuffer(queue, x, plain, 0, 0, 16, 0, NULL, NULL), CL_INVALID_OPERATION);
    CHECK_ERR(clEnqueueCopyBuffer(queue, plain, x, 0, 0, 16, 0, NULL, NULL), CL_SUCCESS);
    /* Built-in kernels may write it (copy_bytes' destination), not read it (its source). */
    cl_program p = clCreateProgramWithBuiltInKernels(ctx, 1, &device, "copy_bytes", &err);
    cl_kernel k = clCreateKernel(p, "copy_bytes", &err);
    cl_ulong n = 16;
    CHECK_ERR(clSetKernelArg(k, 0, sizeof(cl_mem), &plain), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(k, 1, sizeof(cl_mem), &x), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(k, 2, sizeof n, &n), CL_SUCCESS);
    CHECK_ERR(clEnqueueTask(queue, k, 0, NULL, NULL), CL_INVALID_OPERATION);
    CHECK_ERR(clSetKernelArg(k, 0, sizeof(cl_mem), &x), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(k, 1, sizeof(cl_mem), &plain), CL_SUCCESS);
    CHECK_ERR(clEnqueueTask(queue, k, 0, NULL, NULL), CL_SUCCESS);
    CHECK_ERR(clFinish(queue), CL_SUCCESS);
    clReleaseKernel(k);
    clReleaseProgram(p);
    clReleaseMemObject(plain);
    clReleaseMemObject(x);
}

int main(void) {
    setup();
    struct {
        const char *name;
        void (*f)(void);
        int needs_domain;
    } tests[] = {
        {"amd::create_flags", test_create_flags, 0},
        {"amd::entry_point_errors", test_entry_point_errors, 0},
        {"amd::advertised_where_it_works", test_advertised_where_it_works, 0},
        {"amd::resident_and_wait", test_resident_and_wait, 1},
        {"amd::external_physical_on_ivshmem", test_external_physical_on_ivshmem, 1},
    };
    int ready = platform && device && ctx && queue;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (platform && tests[i].needs_domain && !advertised)
            ignore_test(tests[i].name, "needs an IOMMU domain (a device bound to vfio-pci), absent here: run in the "
                                       "QEMU guest: make test-guest-icd");
        else
            run_test(tests[i].name, tests[i].f, ready);
    }
    close_cpu_device(ctx, queue);
    return finish_tests();
}
