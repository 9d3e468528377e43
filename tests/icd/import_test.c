/* C tests of cl_arm_import_memory (seed 004) through the real loader
 * (-lOpenCL, OCL_ICD_VENDORS=<dmabridge.icd>), with Khronos CL/cl_ext.h's
 * clImportMemoryARM prototype, CL_IMPORT_TYPE_ARM, CL_IMPORT_TYPE_HOST_ARM
 * and CL_IMPORT_TYPE_DMA_BUF_ARM:
 *  - the entry point resolves through clGetExtensionFunctionAddressForPlatform
 *    and the three extension strings are advertised;
 *  - every error code of the seed: CL_INVALID_CONTEXT, CL_INVALID_VALUE for
 *    flags, properties, a NULL memory, size 0, a bad fd and page-sharing
 *    imports with other flags, CL_INVALID_OPERATION for unmapped pages;
 *  - read-only pages make a CL_MEM_READ_ONLY buffer whatever the flags, with
 *    every write refused (CL_INVALID_OPERATION);
 *  - zero copy: malloc'ed memory imported by default (NULL properties), read
 *    through CL, written through CL (visible in the malloc'ed memory), mapped
 *    at its own address;
 *  - a dma-buf exported by cl_dmabridge_dma_buf_export (where /dev/udmabuf
 *    opens) imported with CL_IMPORT_TYPE_DMA_BUF_ARM, the fd closed after
 *    the import, bytes seen both ways.
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
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"

static cl_platform_id platform;
static cl_device_id device;
static cl_context ctx;
static cl_command_queue queue;
/* The type of CL/cl_ext.h's prototype (Debian's header has no
   clImportMemoryARM_fn typedef; __typeof__ takes the header's own signature
   without referencing the symbol, which the loader does not export). */
typedef __typeof__(&clImportMemoryARM) import_arm_fn;
static import_arm_fn import;
static long page;

static void setup(void) {
    page = sysconf(_SC_PAGESIZE);
    open_cpu_device(&platform, &device, &ctx, &queue);
    if (!queue) return;
    import = (import_arm_fn)clGetExtensionFunctionAddressForPlatform(platform, "clImportMemoryARM");
}

/* The code clImportMemoryARM answers (releasing the buffer if it made one). */
static cl_int import_code(cl_context c, cl_mem_flags flags, const cl_import_properties_arm *props, void *memory,
                          size_t size) {
    cl_int err = 1;
    cl_mem m = import(c, flags, props, memory, size, &err);
    CHECK((m == NULL) == (err != CL_SUCCESS));
    if (m) clReleaseMemObject(m);
    return err;
}

static void test_entry_point_and_extension_strings(void) {
    CHECK(import != NULL);
    char ext[4096] = {0};
    CHECK_ERR(clGetPlatformInfo(platform, CL_PLATFORM_EXTENSIONS, sizeof ext, ext, NULL), CL_SUCCESS);
    CHECK(has_word(ext, "cl_arm_import_memory") && has_word(ext, "cl_arm_import_memory_host"));
    CHECK(has_word(ext, "cl_arm_import_memory_dma_buf"));
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, sizeof ext, ext, NULL), CL_SUCCESS);
    CHECK(has_word(ext, "cl_arm_import_memory") && has_word(ext, "cl_arm_import_memory_host"));
    CHECK(has_word(ext, "cl_arm_import_memory_dma_buf"));
}

static void test_error_codes(void) {
    if (!import) return;
    static char host[4096];
    cl_import_properties_arm host_props[] = {CL_IMPORT_TYPE_ARM, CL_IMPORT_TYPE_HOST_ARM, 0};
    /* CL_INVALID_CONTEXT: NULL, another kind of handle, a released context. */
    CHECK_ERR(import_code(NULL, CL_MEM_READ_WRITE, host_props, host, sizeof host), CL_INVALID_CONTEXT);
    CHECK_ERR(import_code((cl_context)queue, CL_MEM_READ_WRITE, host_props, host, sizeof host), CL_INVALID_CONTEXT);
    cl_int err;
    cl_context gone = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK_ERR(clReleaseContext(gone), CL_SUCCESS);
    CHECK_ERR(import_code(gone, CL_MEM_READ_WRITE, host_props, host, sizeof host), CL_INVALID_CONTEXT);
    /* errcode_ret may be NULL. */
    CHECK(import(NULL, CL_MEM_READ_WRITE, host_props, host, sizeof host, NULL) == NULL);
    /* CL_INVALID_VALUE: flags. */
    const cl_mem_flags bad_flags[] = {
        CL_MEM_ALLOC_HOST_PTR, CL_MEM_COPY_HOST_PTR, CL_MEM_READ_WRITE | CL_MEM_READ_ONLY,
        CL_MEM_WRITE_ONLY | CL_MEM_READ_ONLY, CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS,
        CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR, (cl_mem_flags)1 << 12,
    };
    for (size_t i = 0; i < sizeof bad_flags / sizeof bad_flags[0]; i++)
        CHECK_ERR(import_code(ctx, bad_flags[i], host_props, host, sizeof host), CL_INVALID_VALUE);
    /* CL_INVALID_VALUE: properties. */
    cl_import_properties_arm unknown_name[] = {0x4195, 0, 0};
    cl_import_properties_arm protected_type[] = {CL_IMPORT_TYPE_ARM, CL_IMPORT_TYPE_PROTECTED_ARM, 0};
    cl_import_properties_arm unknown_type[] = {CL_IMPORT_TYPE_ARM, 0x1234, 0};
    cl_import_properties_arm twice[] = {CL_IMPORT_TYPE_ARM, CL_IMPORT_TYPE_HOST_ARM, CL_IMPORT_TYPE_ARM,
                                        CL_IMPORT_TYPE_HOST_ARM, 0};
    CHECK_ERR(import_code(ctx, 0, unknown_name, host, sizeof host), CL_INVALID_VALUE);
    CHECK_ERR(import_code(ctx, 0, protected_type, host, sizeof host), CL_INVALID_VALUE);
    CHECK_ERR(import_code(ctx, 0, unknown_type, host, sizeof host), CL_INVALID_VALUE);
    CHECK_ERR(import_code(ctx, 0, twice, host, sizeof host), CL_INVALID_VALUE);
    /* CL_INVALID_VALUE: memory NULL, size 0. */
    CHECK_ERR(import_code(ctx, 0, NULL, NULL, sizeof host), CL_INVALID_VALUE);
    CHECK_ERR(import_code(ctx, 0, host_props, host, 0), CL_INVALID_VALUE);
    /* The whole-allocation size is for dma-bufs only. */
    CHECK_ERR(import_code(ctx, 0, host_props, host, CL_IMPORT_MEMORY_WHOLE_ALLOCATION_ARM), CL_INVALID_VALUE);
    /* CL_INVALID_VALUE: a dma-buf fd that is -1, or not a dma-buf. */
    cl_import_properties_arm dma_props[] = {CL_IMPORT_TYPE_ARM, CL_IMPORT_TYPE_DMA_BUF_ARM, 0};
    int fd = -1;
    CHECK_ERR(import_code(ctx, 0, dma_props, &fd, 4096), CL_INVALID_VALUE);
    fd = memfd_create("not-a-dmabuf", MFD_CLOEXEC);
    CHECK(fd >= 0 && ftruncate(fd, 4096) == 0);
    CHECK_ERR(import_code(ctx, 0, dma_props, &fd, 4096), CL_INVALID_VALUE);
    close(fd);
    CHECK_ERR(import_code(ctx, 0, dma_props, NULL, 4096), CL_INVALID_VALUE);
    /* CL_INVALID_OPERATION: pages that are not mapped (a hole after the first page). */
    char *two = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(two != MAP_FAILED);
    if (two == MAP_FAILED) return;
    CHECK(munmap(two + page, page) == 0);
    CHECK_ERR(import_code(ctx, 0, NULL, two + page - 8, 16), CL_INVALID_OPERATION);
    CHECK_ERR(import_code(ctx, 0, NULL, two + page, 8), CL_INVALID_OPERATION);
    /* Mapped but never touched: fine (the import commits the page). */
    CHECK_ERR(import_code(ctx, 0, NULL, two, 16), CL_SUCCESS);
    /* Two unaligned imports sharing a page: the same flags work, others are
       CL_INVALID_VALUE; released, the page takes any flags again. */
    cl_mem a = import(ctx, CL_MEM_READ_WRITE, NULL, two, 100, &err);
    CHECK(a != NULL && err == CL_SUCCESS);
    CHECK_ERR(import_code(ctx, CL_MEM_READ_ONLY, NULL, two + 200, 100), CL_INVALID_VALUE);
    CHECK_ERR(import_code(ctx, CL_MEM_READ_WRITE | CL_MEM_HOST_NO_ACCESS, NULL, two + 200, 100), CL_INVALID_VALUE);
    CHECK_ERR(import_code(ctx, CL_MEM_READ_WRITE, NULL, two + 200, 100), CL_SUCCESS);
    if (a) clReleaseMemObject(a);
    CHECK_ERR(import_code(ctx, CL_MEM_READ_ONLY, NULL, two + 200, 100), CL_SUCCESS);
    munmap(two, page);
}

/* Read-only pages (as a read-only dma-buf) make a read-only buffer whatever
   the flags: CL_MEM_FLAGS says CL_MEM_READ_ONLY | CL_MEM_HOST_READ_ONLY, every
   write answers CL_INVALID_OPERATION, reads work. A range wrapping around the
   address space is not mapped: CL_INVALID_OPERATION. */
static void test_read_only_pages(void) {
    if (!import) return;
    unsigned char *ro = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(ro != MAP_FAILED);
    if (ro == MAP_FAILED) return;
    cl_int err = 1;
    cl_mem b = import(ctx, CL_MEM_READ_WRITE, NULL, ro, 256, &err);
    CHECK(b != NULL && err == CL_SUCCESS);
    if (b) {
        cl_mem_flags flags = 0;
        CHECK_ERR(clGetMemObjectInfo(b, CL_MEM_FLAGS, sizeof flags, &flags, NULL), CL_SUCCESS);
        CHECK(flags == (CL_MEM_READ_ONLY | CL_MEM_HOST_READ_ONLY));
        unsigned char out[16] = {1};
        CHECK_ERR(clEnqueueReadBuffer(queue, b, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL), CL_SUCCESS);
        CHECK(out[0] == 0 && out[15] == 0);
        CHECK_ERR(clEnqueueWriteBuffer(queue, b, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL), CL_INVALID_OPERATION);
        cl_uint pattern = 7;
        CHECK_ERR(clEnqueueFillBuffer(queue, b, &pattern, sizeof pattern, 0, 16, 0, NULL, NULL), CL_INVALID_OPERATION);
        void *m = clEnqueueMapBuffer(queue, b, CL_TRUE, CL_MAP_WRITE, 0, 16, 0, NULL, NULL, &err);
        CHECK(m == NULL && err == CL_INVALID_OPERATION);
        CHECK_ERR(clReleaseMemObject(b), CL_SUCCESS);
    }
    munmap(ro, page);
    CHECK_ERR(import_code(ctx, 0, NULL, (void *)(uintptr_t)(SIZE_MAX - 4095), 8192), CL_INVALID_OPERATION);
}

/* Host memory imported by default: CL sees the malloc'ed bytes, writes land
   in them, and a map is the memory itself. */
static void test_malloc_round_trip(void) {
    if (!import) return;
    size_t n = 3 * (size_t)page + 123;
    unsigned char *mem = malloc(n);
    CHECK(mem != NULL);
    if (!mem) return;
    for (size_t i = 0; i < n; i++) mem[i] = (unsigned char)(i * 13 + 5);
    cl_int err = 1;
    cl_import_properties_arm just_zero[] = {0};
    cl_mem b = import(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, just_zero, mem, n, &err);
    CHECK(b != NULL && err == CL_SUCCESS);
    if (!b) {
        free(mem);
        return;
    }
    cl_mem_flags flags = 0;
    CHECK_ERR(clGetMemObjectInfo(b, CL_MEM_FLAGS, sizeof flags, &flags, NULL), CL_SUCCESS);
    CHECK(flags == CL_MEM_READ_WRITE);
    size_t size = 0;
    CHECK_ERR(clGetMemObjectInfo(b, CL_MEM_SIZE, sizeof size, &size, NULL), CL_SUCCESS);
    CHECK(size == n);
    unsigned char *out = malloc(n);
    CHECK_ERR(clEnqueueReadBuffer(queue, b, CL_TRUE, 0, n, out, 0, NULL, NULL), CL_SUCCESS);
    CHECK(memcmp(out, mem, n) == 0);
    const char msg[] = "written through CL";
    CHECK_ERR(clEnqueueWriteBuffer(queue, b, CL_TRUE, 1000, sizeof msg, msg, 0, NULL, NULL), CL_SUCCESS);
    CHECK(memcmp(mem + 1000, msg, sizeof msg) == 0);
    cl_uint pattern = 0xA5A5A5A5u;
    CHECK_ERR(clEnqueueFillBuffer(queue, b, &pattern, sizeof pattern, 2048, 64, 0, NULL, NULL), CL_SUCCESS);
    CHECK_ERR(clFinish(queue), CL_SUCCESS);
    CHECK(mem[2048] == 0xA5 && mem[2048 + 63] == 0xA5);
    void *m = clEnqueueMapBuffer(queue, b, CL_TRUE, CL_MAP_READ, 16, 32, 0, NULL, NULL, &err);
    CHECK(err == CL_SUCCESS && m == mem + 16);
    if (m) CHECK_ERR(clEnqueueUnmapMemObject(queue, b, m, 0, NULL, NULL), CL_SUCCESS);
    CHECK_ERR(clFinish(queue), CL_SUCCESS);
    CHECK_ERR(clReleaseMemObject(b), CL_SUCCESS);
    free(out);
    free(mem);
}

/* A dma-buf exported by dmabridge (CL_MEM_ALLOC_HOST_PTR buffer), imported
   with CL_IMPORT_TYPE_DMA_BUF_ARM; the fd is closed right after. */
static void test_dma_buf_round_trip(void) {
    if (!import) return;
    clGetMemObjectDmaBufFdDMABRIDGE_fn mem_fd = (clGetMemObjectDmaBufFdDMABRIDGE_fn)
        clGetExtensionFunctionAddressForPlatform(platform, "clGetMemObjectDmaBufFdDMABRIDGE");
    CHECK(mem_fd != NULL);
    if (!mem_fd) return;
    size_t n = 2 * (size_t)page;
    cl_int err;
    cl_mem src = clCreateBuffer(ctx, CL_MEM_ALLOC_HOST_PTR, n, NULL, &err);
    unsigned char *data = malloc(n);
    for (size_t i = 0; i < n; i++) data[i] = (unsigned char)(i * 3 + 1);
    CHECK_ERR(clEnqueueWriteBuffer(queue, src, CL_TRUE, 0, n, data, 0, NULL, NULL), CL_SUCCESS);
    int fd = -1;
    CHECK_ERR(mem_fd(src, NULL, &fd), CL_SUCCESS);
    if (fd < 0) {
        clReleaseMemObject(src);
        free(data);
        return;
    }
    cl_import_properties_arm dma_props[] = {CL_IMPORT_TYPE_ARM, CL_IMPORT_TYPE_DMA_BUF_ARM, 0};
    CHECK_ERR(import_code(ctx, 0, dma_props, &fd, n + 1), CL_INVALID_VALUE); /* larger than the dma-buf */
    cl_mem whole = import(ctx, 0, dma_props, &fd, CL_IMPORT_MEMORY_WHOLE_ALLOCATION_ARM, &err);
    CHECK(whole != NULL && err == CL_SUCCESS);
    size_t whole_size = 0;
    if (whole) {
        CHECK_ERR(clGetMemObjectInfo(whole, CL_MEM_SIZE, sizeof whole_size, &whole_size, NULL), CL_SUCCESS);
        clReleaseMemObject(whole);
    }
    CHECK(whole_size == n);
    cl_mem b = import(ctx, CL_MEM_READ_WRITE, dma_props, &fd, n, &err);
    CHECK(b != NULL && err == CL_SUCCESS);
    close(fd); /* the buffer keeps its own */
    if (b) {
        unsigned char *out = malloc(n);
        CHECK_ERR(clEnqueueReadBuffer(queue, b, CL_TRUE, 0, n, out, 0, NULL, NULL), CL_SUCCESS);
        CHECK(memcmp(out, data, n) == 0);
        const char msg[] = "through the import";
        CHECK_ERR(clEnqueueWriteBuffer(queue, b, CL_TRUE, 10, sizeof msg, msg, 0, NULL, NULL), CL_SUCCESS);
        /* The exporting buffer shows it: the same pages. */
        CHECK_ERR(clEnqueueReadBuffer(queue, src, CL_TRUE, 0, n, out, 0, NULL, NULL), CL_SUCCESS);
        CHECK(memcmp(out + 10, msg, sizeof msg) == 0);
        free(out);
        CHECK_ERR(clReleaseMemObject(b), CL_SUCCESS);
    }
    clReleaseMemObject(src);
    free(data);
}

int main(void) {
    setup();
    int ready = platform != NULL && ctx != NULL && queue != NULL;
    run_test("import::entry_point_and_extension_strings", test_entry_point_and_extension_strings, ready);
    run_test("import::error_codes", test_error_codes, ready);
    run_test("import::malloc_round_trip", test_malloc_round_trip, ready);
    run_test("import::read_only_pages", test_read_only_pages, ready);
    int udmabuf = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
    if (udmabuf >= 0) {
        close(udmabuf);
        run_test("import::dma_buf_round_trip", test_dma_buf_round_trip, ready);
    } else {
        char why[128];
        snprintf(why, sizeof why, "/dev/udmabuf: %s", strerror(errno));
        ignore_test("import::dma_buf_round_trip", why);
    }
    return finish_tests();
}
