/* C tests of cl_khr_external_memory(_dma_buf) and cl_khr_semaphore,
 * cl_khr_external_semaphore(_sync_fd) through the real loader, with Khronos
 * CL/cl_ext.h's prototypes:
 *  - every entry point resolves through clGetExtensionFunctionAddressForPlatform,
 *    the five extension strings are listed, and the platform and device
 *    handle-type queries answer dma-buf import, sync_fd import, no export;
 *  - clCreateBufferWithProperties: every error code (CL_INVALID_PROPERTY,
 *    CL_INVALID_DEVICE, CL_INVALID_VALUE, CL_INVALID_HOST_PTR,
 *    CL_INVALID_BUFFER_SIZE), CL_MEM_PROPERTIES as given;
 *  - acquire/release: their error codes, and (where /dev/udmabuf opens) a
 *    dma-buf of cl_dmabridge_dma_buf_export imported the Khronos way with a
 *    device list, bracketed, written and read through the exporter's pages;
 *  - semaphores: every error code, info, reference counts, no export, a
 *    signal/wait pair, and a wait on an imported pollable fd that holds the
 *    queue until the fd is readable (an eventfd plays the fence on any
 *    machine; the guest tests use vgem's real fences).
 * Closing line: "N passed, N failed". */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <CL/cl_dmabridge.h>
#include <CL/cl_ext.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static cl_platform_id platform;
static cl_device_id device;
static cl_context ctx;
static cl_command_queue queue;

/* The header's own prototypes as pointer types (Debian's header has no
   _fn typedefs for some of them; __typeof__ does not reference the symbol). */
#define FN(name) static __typeof__(&name) p_##name
FN(clEnqueueAcquireExternalMemObjectsKHR);
FN(clEnqueueReleaseExternalMemObjectsKHR);
FN(clCreateSemaphoreWithPropertiesKHR);
FN(clEnqueueWaitSemaphoresKHR);
FN(clEnqueueSignalSemaphoresKHR);
FN(clGetSemaphoreInfoKHR);
FN(clRetainSemaphoreKHR);
FN(clReleaseSemaphoreKHR);
FN(clGetSemaphoreHandleForTypeKHR);
#define LOAD(name) p_##name = (__typeof__(p_##name))clGetExtensionFunctionAddressForPlatform(platform, #name)

static void setup(void) {
    open_cpu_device(&platform, &device, &ctx, &queue);
    if (!queue) return;
    LOAD(clEnqueueAcquireExternalMemObjectsKHR);
    LOAD(clEnqueueReleaseExternalMemObjectsKHR);
    LOAD(clCreateSemaphoreWithPropertiesKHR);
    LOAD(clEnqueueWaitSemaphoresKHR);
    LOAD(clEnqueueSignalSemaphoresKHR);
    LOAD(clGetSemaphoreInfoKHR);
    LOAD(clRetainSemaphoreKHR);
    LOAD(clReleaseSemaphoreKHR);
    LOAD(clGetSemaphoreHandleForTypeKHR);
}

static int all_loaded(void) {
    return p_clEnqueueAcquireExternalMemObjectsKHR && p_clEnqueueReleaseExternalMemObjectsKHR &&
           p_clCreateSemaphoreWithPropertiesKHR && p_clEnqueueWaitSemaphoresKHR && p_clEnqueueSignalSemaphoresKHR &&
           p_clGetSemaphoreInfoKHR && p_clRetainSemaphoreKHR && p_clReleaseSemaphoreKHR &&
           p_clGetSemaphoreHandleForTypeKHR;
}

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* A cl_uint[] query answer: how many entries, the first in *first. */
static size_t uint_list(cl_int (*q)(void *, cl_uint, size_t, void *, size_t *), void *obj, cl_uint param,
                        cl_uint *first) {
    cl_uint v[8] = {0};
    size_t size = 0;
    CHECK_ERR(q(obj, param, sizeof v, v, &size), CL_SUCCESS);
    *first = v[0];
    return size / sizeof(cl_uint);
}
static cl_int platform_q(void *o, cl_uint p, size_t s, void *v, size_t *r) {
    return clGetPlatformInfo((cl_platform_id)o, p, s, v, r);
}
static cl_int device_q(void *o, cl_uint p, size_t s, void *v, size_t *r) {
    return clGetDeviceInfo((cl_device_id)o, p, s, v, r);
}

static void test_entry_points_strings_and_queries(void) {
    CHECK(all_loaded());
    char ext[4096] = {0};
    CHECK_ERR(clGetPlatformInfo(platform, CL_PLATFORM_EXTENSIONS, sizeof ext, ext, NULL), CL_SUCCESS);
    const char *names[] = {"cl_khr_external_memory", "cl_khr_external_memory_dma_buf", "cl_khr_semaphore",
                           "cl_khr_external_semaphore", "cl_khr_external_semaphore_sync_fd"};
    for (size_t i = 0; i < 5; i++) CHECK(has_word(ext, names[i]));
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, sizeof ext, ext, NULL), CL_SUCCESS);
    for (size_t i = 0; i < 5; i++) CHECK(has_word(ext, names[i]));
    cl_uint first = 0;
    CHECK(uint_list(platform_q, platform, CL_PLATFORM_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR, &first) == 1);
    CHECK(first == CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR);
    CHECK(uint_list(device_q, device, CL_DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR, &first) == 1);
    CHECK(first == CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR);
    CHECK(uint_list(platform_q, platform, CL_PLATFORM_SEMAPHORE_TYPES_KHR, &first) == 1);
    CHECK(first == CL_SEMAPHORE_TYPE_BINARY_KHR);
    CHECK(uint_list(device_q, device, CL_DEVICE_SEMAPHORE_TYPES_KHR, &first) == 1);
    CHECK(first == CL_SEMAPHORE_TYPE_BINARY_KHR);
    CHECK(uint_list(platform_q, platform, CL_PLATFORM_SEMAPHORE_IMPORT_HANDLE_TYPES_KHR, &first) == 1);
    CHECK(first == CL_SEMAPHORE_HANDLE_SYNC_FD_KHR);
    CHECK(uint_list(device_q, device, CL_DEVICE_SEMAPHORE_IMPORT_HANDLE_TYPES_KHR, &first) == 1);
    CHECK(first == CL_SEMAPHORE_HANDLE_SYNC_FD_KHR);
    CHECK(uint_list(platform_q, platform, CL_PLATFORM_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR, &first) == 0);
    CHECK(uint_list(device_q, device, CL_DEVICE_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR, &first) == 0);
}

/* The code clCreateBufferWithProperties answers (releasing what it made). */
static cl_int create_code(const cl_mem_properties *props, cl_mem_flags flags, size_t size, void *host) {
    cl_int err = 1;
    cl_mem b = clCreateBufferWithProperties(ctx, props, flags, size, host, &err);
    if (b) clReleaseMemObject(b);
    return err;
}

static void test_buffer_property_errors(void) {
    int memfd = memfd_create("not-a-dma-buf", MFD_CLOEXEC);
    CHECK(memfd >= 0 && ftruncate(memfd, 4096) == 0);
    cl_mem_properties unknown[] = {0x4242, 1, 0};
    CHECK_ERR(create_code(unknown, 0, 64, NULL), CL_INVALID_PROPERTY);
    cl_mem_properties list_only[] = {CL_DEVICE_HANDLE_LIST_KHR, (cl_mem_properties)device,
                                     CL_DEVICE_HANDLE_LIST_END_KHR, 0};
    CHECK_ERR(create_code(list_only, 0, 64, NULL), CL_INVALID_PROPERTY);
    cl_mem_properties bad_device[] = {CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR, (cl_mem_properties)memfd,
                                      CL_DEVICE_HANDLE_LIST_KHR, (cl_mem_properties)(uintptr_t)&memfd,
                                      CL_DEVICE_HANDLE_LIST_END_KHR, 0};
    CHECK_ERR(create_code(bad_device, 0, 64, NULL), CL_INVALID_DEVICE);
    cl_mem_properties negative[] = {CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR, (cl_mem_properties)-1, 0};
    CHECK_ERR(create_code(negative, 0, 64, NULL), CL_INVALID_VALUE);
    cl_mem_properties twice[] = {CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR, (cl_mem_properties)memfd,
                                 CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR, (cl_mem_properties)memfd, 0};
    CHECK_ERR(create_code(twice, 0, 64, NULL), CL_INVALID_PROPERTY);
    cl_mem_properties not_dma_buf[] = {CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR, (cl_mem_properties)memfd, 0};
    CHECK_ERR(create_code(not_dma_buf, 0, 4096, NULL), CL_INVALID_VALUE);
    char host[64];
    CHECK_ERR(create_code(not_dma_buf, 0, 64, host), CL_INVALID_HOST_PTR);
    CHECK_ERR(create_code(not_dma_buf, CL_MEM_ALLOC_HOST_PTR, 64, NULL), CL_INVALID_VALUE);
    CHECK_ERR(create_code(not_dma_buf, 0, 0, NULL), CL_INVALID_BUFFER_SIZE);
    CHECK_ERR(create_code(NULL, 0, 64, NULL), CL_SUCCESS);
    cl_int err;
    CHECK(clCreateBufferWithProperties(NULL, not_dma_buf, 0, 64, NULL, &err) == NULL && err == CL_INVALID_CONTEXT);
    /* An empty list is kept as given. */
    cl_mem_properties empty[] = {0};
    cl_mem b = clCreateBufferWithProperties(ctx, empty, 0, 64, NULL, &err);
    CHECK(b != NULL && err == CL_SUCCESS);
    if (b) {
        cl_mem_properties got[4] = {7, 7};
        size_t size = 0;
        CHECK_ERR(clGetMemObjectInfo(b, CL_MEM_PROPERTIES, sizeof got, got, &size), CL_SUCCESS);
        CHECK(size == sizeof(cl_mem_properties) && got[0] == 0);
        /* Not from an external handle. */
        CHECK_ERR(p_clEnqueueAcquireExternalMemObjectsKHR(queue, 1, &b, 0, NULL, NULL), CL_INVALID_MEM_OBJECT);
        CHECK_ERR(p_clEnqueueReleaseExternalMemObjectsKHR(queue, 1, &b, 0, NULL, NULL), CL_INVALID_MEM_OBJECT);
        clReleaseMemObject(b);
    }
    close(memfd);
}

static void test_acquire_release_errors(void) {
    cl_mem none = NULL;
    CHECK_ERR(p_clEnqueueAcquireExternalMemObjectsKHR(NULL, 1, &none, 0, NULL, NULL), CL_INVALID_COMMAND_QUEUE);
    CHECK_ERR(p_clEnqueueAcquireExternalMemObjectsKHR(queue, 0, NULL, 0, NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(p_clEnqueueAcquireExternalMemObjectsKHR(queue, 1, NULL, 0, NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(p_clEnqueueAcquireExternalMemObjectsKHR(queue, 0, &none, 0, NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(p_clEnqueueAcquireExternalMemObjectsKHR(queue, 1, &none, 0, NULL, NULL), CL_INVALID_MEM_OBJECT);
    CHECK_ERR(p_clEnqueueReleaseExternalMemObjectsKHR(queue, 1, &none, 0, NULL, NULL), CL_INVALID_MEM_OBJECT);
    CHECK_ERR(p_clEnqueueReleaseExternalMemObjectsKHR(NULL, 1, &none, 0, NULL, NULL), CL_INVALID_COMMAND_QUEUE);
}

/* Where /dev/udmabuf opens: a dmabridge export imported the Khronos way. */
static void test_dma_buf_bracket(void) {
    clGetMemObjectDmaBufFdDMABRIDGE_fn mem_fd =
        (clGetMemObjectDmaBufFdDMABRIDGE_fn)clGetExtensionFunctionAddressForPlatform(platform,
                                                                                    "clGetMemObjectDmaBufFdDMABRIDGE");
    CHECK(mem_fd != NULL);
    if (!mem_fd) return;
    size_t n = 8192;
    cl_int err;
    cl_mem src = clCreateBuffer(ctx, CL_MEM_ALLOC_HOST_PTR, n, NULL, &err);
    unsigned char *data = malloc(n);
    for (size_t i = 0; i < n; i++) data[i] = (unsigned char)(i * 7 + 3);
    CHECK_ERR(clEnqueueWriteBuffer(queue, src, CL_TRUE, 0, n, data, 0, NULL, NULL), CL_SUCCESS);
    int fd = -1;
    CHECK_ERR(mem_fd(src, NULL, &fd), CL_SUCCESS);
    if (fd < 0) {
        clReleaseMemObject(src);
        free(data);
        return;
    }
    cl_mem_properties props[] = {CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR, (cl_mem_properties)fd,
                                 CL_DEVICE_HANDLE_LIST_KHR, (cl_mem_properties)device,
                                 CL_DEVICE_HANDLE_LIST_END_KHR, 0};
    CHECK_ERR(create_code(props, 0, n + 1, NULL), CL_INVALID_VALUE); /* larger than the dma-buf */
    cl_mem b = clCreateBufferWithProperties(ctx, props, CL_MEM_READ_WRITE, n, NULL, &err);
    CHECK(b != NULL && err == CL_SUCCESS);
    close(fd); /* the buffer keeps its own */
    if (b) {
        cl_mem_properties got[8] = {0};
        size_t size = 0;
        CHECK_ERR(clGetMemObjectInfo(b, CL_MEM_PROPERTIES, sizeof got, got, &size), CL_SUCCESS);
        CHECK(size == sizeof props && memcmp(got, props, sizeof props) == 0);
        /* Outside the bracket: releasing, and any command that uses it
           (the text leaves it undefined; dmabridge refuses it). */
        CHECK_ERR(p_clEnqueueReleaseExternalMemObjectsKHR(queue, 1, &b, 0, NULL, NULL), CL_INVALID_OPERATION);
        unsigned char early[16];
        CHECK_ERR(clEnqueueReadBuffer(queue, b, CL_TRUE, 0, sizeof early, early, 0, NULL, NULL), CL_INVALID_OPERATION);
        const unsigned char zero = 0;
        CHECK_ERR(clEnqueueFillBuffer(queue, b, &zero, 1, 0, n, 0, NULL, NULL), CL_INVALID_OPERATION);
        cl_int map_err = CL_SUCCESS;
        void *mapped = clEnqueueMapBuffer(queue, b, CL_TRUE, CL_MAP_READ, 0, n, 0, NULL, NULL, &map_err);
        CHECK(mapped == NULL && map_err == CL_INVALID_OPERATION);
        cl_event acquired = NULL;
        CHECK_ERR(p_clEnqueueAcquireExternalMemObjectsKHR(queue, 1, &b, 0, NULL, &acquired), CL_SUCCESS);
        CHECK_ERR(p_clEnqueueAcquireExternalMemObjectsKHR(queue, 1, &b, 0, NULL, NULL), CL_INVALID_OPERATION);
        if (acquired) {
            cl_command_type type = 0;
            CHECK_ERR(clGetEventInfo(acquired, CL_EVENT_COMMAND_TYPE, sizeof type, &type, NULL), CL_SUCCESS);
            CHECK(type == CL_COMMAND_ACQUIRE_EXTERNAL_MEM_OBJECTS_KHR);
            clReleaseEvent(acquired);
        }
        unsigned char *out = malloc(n);
        CHECK_ERR(clEnqueueReadBuffer(queue, b, CL_TRUE, 0, n, out, 0, NULL, NULL), CL_SUCCESS);
        CHECK(memcmp(out, data, n) == 0);
        const char msg[] = "the Khronos way";
        CHECK_ERR(clEnqueueWriteBuffer(queue, b, CL_TRUE, 100, sizeof msg, msg, 0, NULL, NULL), CL_SUCCESS);
        CHECK_ERR(p_clEnqueueReleaseExternalMemObjectsKHR(queue, 1, &b, 0, NULL, NULL), CL_SUCCESS);
        CHECK_ERR(clFinish(queue), CL_SUCCESS);
        CHECK_ERR(clEnqueueReadBuffer(queue, b, CL_TRUE, 0, sizeof early, early, 0, NULL, NULL), CL_INVALID_OPERATION);
        /* The exporting buffer shows it: the same pages. */
        CHECK_ERR(clEnqueueReadBuffer(queue, src, CL_TRUE, 0, n, out, 0, NULL, NULL), CL_SUCCESS);
        CHECK(memcmp(out + 100, msg, sizeof msg) == 0);
        free(out);
        clReleaseMemObject(b);
    }
    clReleaseMemObject(src);
    free(data);
}

static cl_int sema_code(const cl_semaphore_properties_khr *props) {
    cl_int err = 1;
    cl_semaphore_khr s = p_clCreateSemaphoreWithPropertiesKHR(ctx, props, &err);
    if (s) p_clReleaseSemaphoreKHR(s);
    return err;
}

static void test_semaphore_errors_and_info(void) {
    CHECK_ERR(sema_code(NULL), CL_INVALID_VALUE);
    cl_semaphore_properties_khr no_type[] = {0};
    CHECK_ERR(sema_code(no_type), CL_INVALID_VALUE);
    cl_semaphore_properties_khr timeline[] = {CL_SEMAPHORE_TYPE_KHR, 2, 0};
    CHECK_ERR(sema_code(timeline), CL_INVALID_PROPERTY);
    cl_semaphore_properties_khr unknown[] = {CL_SEMAPHORE_TYPE_KHR, CL_SEMAPHORE_TYPE_BINARY_KHR, 0x4242, 1, 0};
    CHECK_ERR(sema_code(unknown), CL_INVALID_PROPERTY);
    cl_semaphore_properties_khr twice[] = {CL_SEMAPHORE_TYPE_KHR, CL_SEMAPHORE_TYPE_BINARY_KHR, CL_SEMAPHORE_TYPE_KHR,
                                           CL_SEMAPHORE_TYPE_BINARY_KHR, 0};
    CHECK_ERR(sema_code(twice), CL_INVALID_PROPERTY);
    cl_semaphore_properties_khr export[] = {CL_SEMAPHORE_TYPE_KHR, CL_SEMAPHORE_TYPE_BINARY_KHR,
                                            CL_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR, CL_SEMAPHORE_HANDLE_SYNC_FD_KHR,
                                            CL_SEMAPHORE_EXPORT_HANDLE_TYPES_LIST_END_KHR, 0};
    CHECK_ERR(sema_code(export), CL_INVALID_PROPERTY);
    cl_semaphore_properties_khr bad_fd[] = {CL_SEMAPHORE_TYPE_KHR, CL_SEMAPHORE_TYPE_BINARY_KHR,
                                            CL_SEMAPHORE_HANDLE_SYNC_FD_KHR, (cl_semaphore_properties_khr)-1, 0};
    CHECK_ERR(sema_code(bad_fd), CL_INVALID_PROPERTY);
    cl_semaphore_properties_khr bad_device[] = {CL_SEMAPHORE_TYPE_KHR, CL_SEMAPHORE_TYPE_BINARY_KHR,
                                                CL_DEVICE_HANDLE_LIST_KHR, (cl_semaphore_properties_khr)ctx,
                                                CL_DEVICE_HANDLE_LIST_END_KHR, 0};
    CHECK_ERR(sema_code(bad_device), CL_INVALID_DEVICE);
    cl_semaphore_properties_khr empty_list[] = {CL_SEMAPHORE_TYPE_KHR, CL_SEMAPHORE_TYPE_BINARY_KHR,
                                                CL_DEVICE_HANDLE_LIST_KHR,
                                                CL_DEVICE_HANDLE_LIST_END_KHR, 0};
    CHECK_ERR(sema_code(empty_list), CL_INVALID_PROPERTY);
    cl_int err;
    cl_semaphore_properties_khr props[] = {CL_SEMAPHORE_TYPE_KHR, CL_SEMAPHORE_TYPE_BINARY_KHR,
                                           CL_DEVICE_HANDLE_LIST_KHR, (cl_semaphore_properties_khr)device,
                                           CL_DEVICE_HANDLE_LIST_END_KHR, 0};
    CHECK(p_clCreateSemaphoreWithPropertiesKHR(NULL, props, &err) == NULL && err == CL_INVALID_CONTEXT);
    cl_semaphore_khr s = p_clCreateSemaphoreWithPropertiesKHR(ctx, props, &err);
    CHECK(s != NULL && err == CL_SUCCESS);
    if (!s) return;
    cl_context c = NULL;
    CHECK_ERR(p_clGetSemaphoreInfoKHR(s, CL_SEMAPHORE_CONTEXT_KHR, sizeof c, &c, NULL), CL_SUCCESS);
    CHECK(c == ctx);
    cl_semaphore_type_khr type = 0;
    CHECK_ERR(p_clGetSemaphoreInfoKHR(s, CL_SEMAPHORE_TYPE_KHR, sizeof type, &type, NULL), CL_SUCCESS);
    CHECK(type == CL_SEMAPHORE_TYPE_BINARY_KHR);
    cl_semaphore_properties_khr got[8] = {0};
    size_t size = 0;
    CHECK_ERR(p_clGetSemaphoreInfoKHR(s, CL_SEMAPHORE_PROPERTIES_KHR, sizeof got, got, &size), CL_SUCCESS);
    CHECK(size == sizeof props && memcmp(got, props, sizeof props) == 0);
    cl_device_id d = NULL;
    CHECK_ERR(p_clGetSemaphoreInfoKHR(s, CL_DEVICE_HANDLE_LIST_KHR, sizeof d, &d, &size), CL_SUCCESS);
    CHECK(d == device && size == sizeof d);
    /* Current Khronos headers name the query CL_SEMAPHORE_DEVICE_HANDLE_LIST_KHR
       (0x2053; Debian's header has CL_DEVICE_HANDLE_LIST_KHR), and add
       CL_SEMAPHORE_EXPORTABLE_KHR (0x2054). */
    d = NULL;
    CHECK_ERR(p_clGetSemaphoreInfoKHR(s, 0x2053, sizeof d, &d, NULL), CL_SUCCESS);
    CHECK(d == device);
    cl_bool exportable = CL_TRUE;
    CHECK_ERR(p_clGetSemaphoreInfoKHR(s, 0x2054, sizeof exportable, &exportable, NULL), CL_SUCCESS);
    CHECK(exportable == CL_FALSE);
    CHECK_ERR(p_clGetSemaphoreInfoKHR(s, CL_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR, 0, NULL, &size), CL_SUCCESS);
    CHECK(size == 0);
    cl_semaphore_payload_khr payload = 7;
    CHECK_ERR(p_clGetSemaphoreInfoKHR(s, CL_SEMAPHORE_PAYLOAD_KHR, sizeof payload, &payload, NULL), CL_SUCCESS);
    CHECK(payload == 0);
    CHECK_ERR(p_clGetSemaphoreInfoKHR(s, 0x4242, sizeof payload, &payload, NULL), CL_INVALID_VALUE);
    CHECK_ERR(p_clGetSemaphoreInfoKHR(NULL, CL_SEMAPHORE_TYPE_KHR, sizeof type, &type, NULL),
              CL_INVALID_SEMAPHORE_KHR);
    cl_uint refs = 0;
    CHECK_ERR(p_clRetainSemaphoreKHR(s), CL_SUCCESS);
    CHECK_ERR(p_clGetSemaphoreInfoKHR(s, CL_SEMAPHORE_REFERENCE_COUNT_KHR, sizeof refs, &refs, NULL), CL_SUCCESS);
    CHECK(refs == 2);
    CHECK_ERR(p_clReleaseSemaphoreKHR(s), CL_SUCCESS);
    CHECK_ERR(p_clRetainSemaphoreKHR(NULL), CL_INVALID_SEMAPHORE_KHR);
    CHECK_ERR(p_clReleaseSemaphoreKHR(NULL), CL_INVALID_SEMAPHORE_KHR);
    /* No export. */
    int fd = -1;
    CHECK_ERR(p_clGetSemaphoreHandleForTypeKHR(s, device, CL_SEMAPHORE_HANDLE_SYNC_FD_KHR, sizeof fd, &fd, NULL),
              CL_INVALID_VALUE);
    CHECK_ERR(p_clGetSemaphoreHandleForTypeKHR(NULL, device, CL_SEMAPHORE_HANDLE_SYNC_FD_KHR, sizeof fd, &fd, NULL),
              CL_INVALID_SEMAPHORE_KHR);
    /* Enqueue errors. */
    CHECK_ERR(p_clEnqueueWaitSemaphoresKHR(queue, 0, NULL, NULL, 0, NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(p_clEnqueueWaitSemaphoresKHR(queue, 1, NULL, NULL, 0, NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(p_clEnqueueWaitSemaphoresKHR(NULL, 1, &s, NULL, 0, NULL, NULL), CL_INVALID_COMMAND_QUEUE);
    cl_semaphore_khr null_sema = NULL;
    CHECK_ERR(p_clEnqueueWaitSemaphoresKHR(queue, 1, &null_sema, NULL, 0, NULL, NULL), CL_INVALID_SEMAPHORE_KHR);
    CHECK_ERR(p_clEnqueueSignalSemaphoresKHR(queue, 1, &null_sema, NULL, 0, NULL, NULL), CL_INVALID_SEMAPHORE_KHR);
    CHECK_ERR(p_clEnqueueWaitSemaphoresKHR(queue, 1, &s, NULL, 1, NULL, NULL), CL_INVALID_EVENT_WAIT_LIST);
    /* Nothing signals it: the wait could never end. */
    CHECK_ERR(p_clEnqueueWaitSemaphoresKHR(queue, 1, &s, NULL, 0, NULL, NULL), CL_INVALID_OPERATION);
    /* A signal, then its wait (the event says what it was). */
    CHECK_ERR(p_clEnqueueSignalSemaphoresKHR(queue, 1, &s, NULL, 0, NULL, NULL), CL_SUCCESS);
    cl_event waited = NULL;
    CHECK_ERR(p_clEnqueueWaitSemaphoresKHR(queue, 1, &s, NULL, 0, NULL, &waited), CL_SUCCESS);
    CHECK_ERR(clFinish(queue), CL_SUCCESS);
    if (waited) {
        cl_command_type ct = 0;
        CHECK_ERR(clGetEventInfo(waited, CL_EVENT_COMMAND_TYPE, sizeof ct, &ct, NULL), CL_SUCCESS);
        CHECK(ct == CL_COMMAND_SEMAPHORE_WAIT_KHR);
        clReleaseEvent(waited);
    }
    /* The wait consumed the signal. */
    CHECK_ERR(p_clEnqueueWaitSemaphoresKHR(queue, 1, &s, NULL, 0, NULL, NULL), CL_INVALID_OPERATION);
    CHECK_ERR(p_clReleaseSemaphoreKHR(s), CL_SUCCESS);
    CHECK_ERR(p_clReleaseSemaphoreKHR(s), CL_INVALID_SEMAPHORE_KHR); /* released: a stale handle */
}

/* A wait on an imported fd holds the queue until the fd is readable. */
static void test_wait_holds_the_queue(void) {
    int efd = eventfd(0, EFD_CLOEXEC);
    CHECK(efd >= 0);
    cl_semaphore_properties_khr props[] = {CL_SEMAPHORE_TYPE_KHR, CL_SEMAPHORE_TYPE_BINARY_KHR,
                                           CL_SEMAPHORE_HANDLE_SYNC_FD_KHR, (cl_semaphore_properties_khr)efd, 0};
    cl_int err;
    cl_semaphore_khr s = p_clCreateSemaphoreWithPropertiesKHR(ctx, props, &err);
    CHECK(s != NULL && err == CL_SUCCESS);
    if (!s) return;
    CHECK_ERR(p_clEnqueueWaitSemaphoresKHR(queue, 1, &s, NULL, 0, NULL, NULL), CL_SUCCESS);
    cl_event after = NULL;
    CHECK_ERR(clEnqueueMarkerWithWaitList(queue, 0, NULL, &after), CL_SUCCESS);
    sleep_ms(200);
    cl_int st = 0;
    CHECK_ERR(clGetEventInfo(after, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL), CL_SUCCESS);
    CHECK(st != CL_COMPLETE);
    uint64_t one = 1;
    CHECK(write(efd, &one, sizeof one) == sizeof one);
    CHECK_ERR(clWaitForEvents(1, &after), CL_SUCCESS);
    clReleaseEvent(after);
    close(efd);
    CHECK_ERR(p_clReleaseSemaphoreKHR(s), CL_SUCCESS);
}

/* On an out-of-order queue a signal with no wait list waits for the commands
   enqueued before it (here a marker held by a user event), and a wait for
   the semaphore, with the commands after it, follows the signal. */
static void test_out_of_order_order(void) {
    cl_int err;
    cl_queue_properties qp[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, 0};
    cl_command_queue ooo = clCreateCommandQueueWithProperties(ctx, device, qp, &err);
    CHECK(ooo != NULL && err == CL_SUCCESS);
    cl_semaphore_properties_khr props[] = {CL_SEMAPHORE_TYPE_KHR, CL_SEMAPHORE_TYPE_BINARY_KHR, 0};
    cl_semaphore_khr s = p_clCreateSemaphoreWithPropertiesKHR(ctx, props, &err);
    CHECK(s != NULL && err == CL_SUCCESS);
    cl_event gate = clCreateUserEvent(ctx, &err);
    CHECK(gate != NULL && err == CL_SUCCESS);
    if (!ooo || !s || !gate) return;
    cl_event held = NULL, signal = NULL, after = NULL;
    CHECK_ERR(clEnqueueMarkerWithWaitList(ooo, 1, &gate, &held), CL_SUCCESS);
    CHECK_ERR(p_clEnqueueSignalSemaphoresKHR(ooo, 1, &s, NULL, 0, NULL, &signal), CL_SUCCESS);
    CHECK_ERR(p_clEnqueueWaitSemaphoresKHR(ooo, 1, &s, NULL, 0, NULL, NULL), CL_SUCCESS);
    const unsigned char one = 1;
    cl_mem m = clCreateBuffer(ctx, 0, 64, NULL, &err);
    CHECK_ERR(clEnqueueFillBuffer(ooo, m, &one, 1, 0, 64, 0, NULL, &after), CL_SUCCESS);
    sleep_ms(200);
    cl_int st = 0;
    CHECK_ERR(clGetEventInfo(signal, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL), CL_SUCCESS);
    CHECK(st != CL_COMPLETE); /* the signal waits for the held marker */
    CHECK_ERR(clGetEventInfo(after, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL), CL_SUCCESS);
    CHECK(st != CL_COMPLETE); /* the fill waits for the wait, which waits for the signal */
    CHECK_ERR(clSetUserEventStatus(gate, CL_COMPLETE), CL_SUCCESS);
    cl_event all[] = {held, signal, after};
    CHECK_ERR(clWaitForEvents(3, all), CL_SUCCESS);
    for (int i = 0; i < 3; i++) clReleaseEvent(all[i]);
    clReleaseEvent(gate);
    clReleaseMemObject(m);
    CHECK_ERR(p_clReleaseSemaphoreKHR(s), CL_SUCCESS);
    clReleaseCommandQueue(ooo);
}

int main(void) {
    setup();
    int ready = platform != NULL && ctx != NULL && queue != NULL && all_loaded();
    run_test("khr_external::entry_points_strings_and_queries", test_entry_points_strings_and_queries, ready);
    run_test("khr_external::buffer_property_errors", test_buffer_property_errors, ready);
    run_test("khr_external::acquire_release_errors", test_acquire_release_errors, ready);
    int udmabuf = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
    if (udmabuf >= 0) {
        close(udmabuf);
        run_test("khr_external::dma_buf_bracket", test_dma_buf_bracket, ready);
    } else {
        char why[128];
        snprintf(why, sizeof why, "/dev/udmabuf: %s", strerror(errno));
        ignore_test("khr_external::dma_buf_bracket", why);
    }
    run_test("khr_external::semaphore_errors_and_info", test_semaphore_errors_and_info, ready);
    run_test("khr_external::wait_holds_the_queue", test_wait_holds_the_queue, ready);
    run_test("khr_external::out_of_order_order", test_out_of_order_order, ready);
    close_cpu_device(ctx, queue);
    return finish_tests();
}
