/* C tests of cl_dmabridge_dma_buf_export (include/CL/cl_dmabridge.h)
 * through the real loader (-lOpenCL, OCL_ICD_VENDORS=<dmabridge.icd>).
 *
 * Everywhere: the entry points resolve, the extension is advertised exactly
 * when /dev/udmabuf opens, the info queries answer (size, offset, the
 * param_value rules) and every error path answers its code.
 * Without /dev/udmabuf (the development host): exports answer
 * CL_INVALID_OPERATION and leave *fd alone; the tests that need a dma-buf
 * are reported as "ignored" with the reason, and counted apart.
 * With it (the QEMU guest): USM, SVM and buffer exports give an fd whose
 * mmap shows the allocation's bytes, both ways, and outlives the free.
 *
 * Closing lines (check.h): "N ignored" and "N passed, N failed". */
#define _GNU_SOURCE /* O_CLOEXEC, mmap, sysconf under -std=c11 */
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
/* Whether this process can open /dev/udmabuf, and why not. */
static int have_udmabuf;
static char no_udmabuf_why[128];

static clGetMemAllocDmaBufFdDMABRIDGE_fn alloc_fd;
static clGetMemObjectDmaBufFdDMABRIDGE_fn mem_fd;
static clGetMemAllocDmaBufInfoDMABRIDGE_fn alloc_info;
static clGetMemObjectDmaBufInfoDMABRIDGE_fn mem_info;
static clHostMemAllocINTEL_fn host_alloc;
static clMemFreeINTEL_fn mem_free;

static void setup(void) {
    open_cpu_device(&platform, &device, &ctx, &queue);
    if (!queue) return;
    alloc_fd = EXT_FN(platform, clGetMemAllocDmaBufFdDMABRIDGE);
    mem_fd = EXT_FN(platform, clGetMemObjectDmaBufFdDMABRIDGE);
    alloc_info = EXT_FN(platform, clGetMemAllocDmaBufInfoDMABRIDGE);
    mem_info = EXT_FN(platform, clGetMemObjectDmaBufInfoDMABRIDGE);
    host_alloc = EXT_FN(platform, clHostMemAllocINTEL);
    mem_free = EXT_FN(platform, clMemFreeINTEL);
    int fd = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
    have_udmabuf = fd >= 0;
    if (fd >= 0) close(fd);
    else snprintf(no_udmabuf_why, sizeof no_udmabuf_why, "/dev/udmabuf: %s", strerror(errno));
}

static cl_bool exportable_alloc(const void *p) {
    cl_bool b = 7;
    size_t size = 0;
    CHECK_ERR(alloc_info(ctx, p, CL_DMA_BUF_EXPORTABLE_DMABRIDGE, sizeof b, &b, &size), CL_SUCCESS);
    CHECK(size == sizeof(cl_bool) && (b == CL_TRUE || b == CL_FALSE));
    return b;
}

static size_t alloc_size_t(const void *p, cl_dma_buf_info_dmabridge param) {
    size_t v = 12345, size = 0;
    CHECK_ERR(alloc_info(ctx, p, param, sizeof v, &v, &size), CL_SUCCESS);
    CHECK(size == sizeof(size_t));
    return v;
}

/* The entry points resolve; the extension strings list the extension
 * exactly where /dev/udmabuf opens, with its version. */
static void test_advertised(void) {
    CHECK(alloc_fd && mem_fd && alloc_info && mem_info && host_alloc && mem_free);
    /* Room for PoCL's OpenCL C extensions too (pocl_programs_test.c). */
    char s[4096] = {0};
    CHECK_ERR(clGetPlatformInfo(platform, CL_PLATFORM_EXTENSIONS, sizeof s, s, NULL), CL_SUCCESS);
    CHECK(has_word(s, CL_DMABRIDGE_DMA_BUF_EXPORT_EXTENSION_NAME) == have_udmabuf);
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, sizeof s, s, NULL), CL_SUCCESS);
    CHECK(has_word(s, CL_DMABRIDGE_DMA_BUF_EXPORT_EXTENSION_NAME) == have_udmabuf);
    cl_name_version nv[64];
    size_t size = 0;
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS_WITH_VERSION, sizeof nv, nv, &size), CL_SUCCESS);
    int found = 0;
    for (size_t i = 0; i < size / sizeof nv[0] && i < 64; i++)
        if (strcmp(nv[i].name, CL_DMABRIDGE_DMA_BUF_EXPORT_EXTENSION_NAME) == 0) {
            found = 1;
            CHECK(nv[i].version == CL_DMABRIDGE_DMA_BUF_EXPORT_EXTENSION_VERSION);
        }
    CHECK(found == have_udmabuf);
}

/* Size and offset of USM and SVM exports; the param_value rules. */
static void test_alloc_info(void) {
    long page = sysconf(_SC_PAGESIZE);
    cl_int err;
    char *p = host_alloc(ctx, NULL, 2 * page, 0, &err);
    CHECK(p != NULL && err == CL_SUCCESS);
    if (!p) return;
    /* The dma-buf starts at the page holding p and covers whole pages. */
    size_t lead = (uintptr_t)p % (uintptr_t)page;
    CHECK(exportable_alloc(p) == (cl_bool)have_udmabuf);
    CHECK(alloc_size_t(p + 100, CL_DMA_BUF_SIZE_DMABRIDGE) == (lead + 2 * page + page - 1) / page * page);
    CHECK(alloc_size_t(p + 100, CL_DMA_BUF_OFFSET_DMABRIDGE) == lead + 100);
    CHECK(alloc_size_t(p + page + 1, CL_DMA_BUF_OFFSET_DMABRIDGE) == lead + page + 1);
    /* A small allocation: one page, at its offset in that page. */
    char *small = host_alloc(ctx, NULL, 64, 0, &err);
    CHECK(small != NULL);
    CHECK(alloc_size_t(small, CL_DMA_BUF_SIZE_DMABRIDGE) == (size_t)page);
    CHECK(alloc_size_t(small + 10, CL_DMA_BUF_OFFSET_DMABRIDGE) == ((uintptr_t)small + 10) % (uintptr_t)page);
    /* SVM allocations are exported the same way. */
    char *svm = clSVMAlloc(ctx, CL_MEM_READ_WRITE, page, 0);
    CHECK(svm != NULL);
    CHECK(exportable_alloc(svm) == (cl_bool)have_udmabuf);
    CHECK(alloc_size_t(svm, CL_DMA_BUF_SIZE_DMABRIDGE) == (size_t)page);
    /* param_value rules: size query, too small (nothing written), unknown name. */
    size_t size = 0;
    CHECK_ERR(alloc_info(ctx, p, CL_DMA_BUF_SIZE_DMABRIDGE, 0, NULL, &size), CL_SUCCESS);
    CHECK(size == sizeof(size_t));
    uint32_t four = 0xAAAAAAAAu;
    CHECK_ERR(alloc_info(ctx, p, CL_DMA_BUF_SIZE_DMABRIDGE, sizeof four, &four, NULL), CL_INVALID_VALUE);
    CHECK(four == 0xAAAAAAAAu);
    CHECK_ERR(alloc_info(ctx, p, 0x4F1F, sizeof size, &size, NULL), CL_INVALID_VALUE);
    /* Not an allocation of the context; a bad context. */
    int local = 0;
    CHECK_ERR(alloc_info(ctx, &local, CL_DMA_BUF_EXPORTABLE_DMABRIDGE, sizeof(cl_bool), &four, NULL),
              CL_INVALID_VALUE);
    CHECK_ERR(alloc_info(NULL, p, CL_DMA_BUF_EXPORTABLE_DMABRIDGE, sizeof(cl_bool), &four, NULL),
              CL_INVALID_CONTEXT);
    CHECK_ERR(alloc_info((cl_context)queue, p, CL_DMA_BUF_EXPORTABLE_DMABRIDGE, sizeof(cl_bool), &four, NULL),
              CL_INVALID_CONTEXT);
    clSVMFree(ctx, svm);
    CHECK_ERR(mem_free(ctx, small), CL_SUCCESS);
    CHECK_ERR(mem_free(ctx, p), CL_SUCCESS);
}

/* Error paths of the USM/SVM export, everywhere; without /dev/udmabuf the
 * export itself answers CL_INVALID_OPERATION and leaves *fd alone. */
static void test_alloc_export_errors(void) {
    long page = sysconf(_SC_PAGESIZE);
    cl_int err;
    char *p = host_alloc(ctx, NULL, page, 0, &err);
    CHECK(p != NULL);
    if (!p) return;
    int fd = -7;
    CHECK_ERR(alloc_fd(ctx, p, NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(alloc_fd(NULL, p, NULL, &fd), CL_INVALID_CONTEXT);
    int local = 0;
    CHECK_ERR(alloc_fd(ctx, &local, NULL, &fd), CL_INVALID_VALUE);
    CHECK_ERR(alloc_fd(ctx, NULL, NULL, &fd), CL_INVALID_VALUE);
    cl_dma_buf_export_properties_dmabridge props[] = {0x4F1F, 1, 0};
    CHECK_ERR(alloc_fd(ctx, p, props, &fd), CL_INVALID_PROPERTY);
    CHECK(fd == -7);
    if (!have_udmabuf) {
        cl_dma_buf_export_properties_dmabridge empty[] = {0};
        CHECK_ERR(alloc_fd(ctx, p, empty, &fd), CL_INVALID_OPERATION);
        CHECK_ERR(alloc_fd(ctx, p + 5, NULL, &fd), CL_INVALID_OPERATION);
        CHECK(fd == -7);
    }
    CHECK_ERR(mem_free(ctx, p), CL_SUCCESS);
    /* A freed allocation is no allocation. */
    CHECK_ERR(alloc_fd(ctx, p, NULL, &fd), CL_INVALID_VALUE);
    CHECK(fd == -7);
}

/* Buffers: info, and the errors that do not depend on udmabuf. */
static void test_buffer_info_and_errors(void) {
    long page = sysconf(_SC_PAGESIZE);
    cl_int err;
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, page + 1, NULL, &err);
    CHECK(b != NULL && err == CL_SUCCESS);
    if (!b) return;
    cl_bool ok = 7;
    size_t v = 0;
    CHECK_ERR(mem_info(b, CL_DMA_BUF_EXPORTABLE_DMABRIDGE, sizeof ok, &ok, NULL), CL_SUCCESS);
    CHECK(ok == (cl_bool)have_udmabuf);
    CHECK_ERR(mem_info(b, CL_DMA_BUF_SIZE_DMABRIDGE, sizeof v, &v, NULL), CL_SUCCESS);
    CHECK(v == (size_t)(2 * page));
    CHECK_ERR(mem_info(b, CL_DMA_BUF_OFFSET_DMABRIDGE, sizeof v, &v, NULL), CL_SUCCESS);
    CHECK(v == 0);
    CHECK_ERR(mem_info(b, 0x4F1F, sizeof v, &v, NULL), CL_INVALID_VALUE);
    CHECK_ERR(mem_info(b, CL_DMA_BUF_SIZE_DMABRIDGE, 1, &v, NULL), CL_INVALID_VALUE);
    CHECK_ERR(mem_info(NULL, CL_DMA_BUF_SIZE_DMABRIDGE, sizeof v, &v, NULL), CL_INVALID_MEM_OBJECT);
    CHECK_ERR(mem_info((cl_mem)ctx, CL_DMA_BUF_SIZE_DMABRIDGE, sizeof v, &v, NULL), CL_INVALID_MEM_OBJECT);
    int fd = -7;
    CHECK_ERR(mem_fd(b, NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(mem_fd(NULL, NULL, &fd), CL_INVALID_MEM_OBJECT);
    cl_dma_buf_export_properties_dmabridge props[] = {0x4F1F, 1, 0};
    CHECK_ERR(mem_fd(b, props, &fd), CL_INVALID_PROPERTY);
    /* Sub-buffers and CL_MEM_USE_HOST_PTR buffers are never exported. */
    cl_buffer_region region = {0, (size_t)page};
    cl_mem sub = clCreateSubBuffer(b, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
    CHECK(sub != NULL && err == CL_SUCCESS);
    if (sub) {
        CHECK_ERR(mem_info(sub, CL_DMA_BUF_EXPORTABLE_DMABRIDGE, sizeof ok, &ok, NULL), CL_SUCCESS);
        CHECK(ok == CL_FALSE);
        CHECK_ERR(mem_fd(sub, NULL, &fd), CL_INVALID_MEM_OBJECT);
        clReleaseMemObject(sub);
    }
    static char host[4096];
    cl_mem u = clCreateBuffer(ctx, CL_MEM_USE_HOST_PTR, sizeof host, host, &err);
    CHECK(u != NULL && err == CL_SUCCESS);
    if (u) {
        CHECK_ERR(mem_info(u, CL_DMA_BUF_EXPORTABLE_DMABRIDGE, sizeof ok, &ok, NULL), CL_SUCCESS);
        CHECK(ok == CL_FALSE);
        CHECK_ERR(mem_fd(u, NULL, &fd), CL_INVALID_MEM_OBJECT);
        clReleaseMemObject(u);
    }
    if (!have_udmabuf) CHECK_ERR(mem_fd(b, NULL, &fd), CL_INVALID_OPERATION);
    CHECK(fd == -7);
    clReleaseMemObject(b);
}

/* The dma-buf of fd: its size, and a shared read-write mapping of it. */
static unsigned char *map_fd(int fd, size_t *size) {
    off_t end = lseek(fd, 0, SEEK_END);
    CHECK(end > 0);
    *size = end > 0 ? (size_t)end : 0;
    if (end <= 0) return NULL;
    void *m = mmap(NULL, *size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(m != MAP_FAILED);
    return m == MAP_FAILED ? NULL : m;
}

/* With /dev/udmabuf: a USM allocation's dma-buf shows its bytes both ways
 * and keeps them after the free. */
static void test_usm_export(void) {
    long page = sysconf(_SC_PAGESIZE);
    cl_int err;
    unsigned char *p = host_alloc(ctx, NULL, 2 * page, 0, &err);
    CHECK(p != NULL);
    if (!p) return;
    for (long i = 0; i < 2 * page; i++) p[i] = (unsigned char)(i * 7 + 1);
    size_t lead = (uintptr_t)p % (uintptr_t)page;
    CHECK(alloc_size_t(p + 3, CL_DMA_BUF_OFFSET_DMABRIDGE) == lead + 3);
    int fd = -1;
    CHECK_ERR(alloc_fd(ctx, p + 3, NULL, &fd), CL_SUCCESS);
    CHECK(fd >= 0);
    if (fd < 0) return;
    CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    size_t size = 0;
    unsigned char *m = map_fd(fd, &size);
    CHECK(size == (lead + 2 * page + page - 1) / page * page);
    unsigned char *mp = m ? m + lead : NULL; /* p's byte 0 in the dma-buf */
    if (mp) {
        CHECK(memcmp(mp, p, 2 * page) == 0);
        mp[page + 5] = 0xEE;
        CHECK(p[page + 5] == 0xEE);
        p[6] = 0x55;
        CHECK(mp[6] == 0x55);
    }
    /* The dma-buf outlives the allocation, with its last contents, and a
     * later allocation does not get its pages. */
    CHECK_ERR(mem_free(ctx, p), CL_SUCCESS);
    unsigned char *q = host_alloc(ctx, NULL, 2 * page, 0, &err);
    CHECK(q != NULL);
    if (q) {
        memset(q, 0x11, 2 * page);
        if (mp) CHECK(mp[6] == 0x55 && mp[page + 5] == 0xEE);
        mem_free(ctx, q);
    }
    if (m) munmap(m, size);
    close(fd);
    /* An SVM allocation, through an interior pointer of a small allocation. */
    unsigned char *s = clSVMAlloc(ctx, CL_MEM_READ_WRITE, 100, 0);
    CHECK(s != NULL);
    if (s) {
        memset(s, 0x42, 100);
        size_t off = alloc_size_t(s + 50, CL_DMA_BUF_OFFSET_DMABRIDGE);
        CHECK_ERR(alloc_fd(ctx, s + 50, NULL, &fd), CL_SUCCESS);
        unsigned char *sm = fd >= 0 ? map_fd(fd, &size) : NULL;
        CHECK(size == (size_t)page && off < size);
        if (sm) {
            CHECK(sm[off] == 0x42 && sm[off - 50] == 0x42 && sm[off + 49] == 0x42);
            munmap(sm, size);
        }
        if (fd >= 0) close(fd);
        clSVMFree(ctx, s);
    }
}

/* With /dev/udmabuf: a buffer's dma-buf shows what was written to it. */
static void test_buffer_export(void) {
    long page = sysconf(_SC_PAGESIZE);
    cl_int err;
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, page, NULL, &err);
    CHECK(b != NULL);
    if (!b) return;
    unsigned char data[256];
    for (int i = 0; i < 256; i++) data[i] = (unsigned char)(255 - i);
    CHECK_ERR(clEnqueueWriteBuffer(queue, b, CL_TRUE, 64, sizeof data, data, 0, NULL, NULL), CL_SUCCESS);
    int fd = -1;
    CHECK_ERR(mem_fd(b, NULL, &fd), CL_SUCCESS);
    CHECK(fd >= 0);
    if (fd >= 0) {
        size_t size = 0;
        unsigned char *m = map_fd(fd, &size);
        CHECK(size == (size_t)page);
        if (m) {
            CHECK(memcmp(m + 64, data, sizeof data) == 0);
            munmap(m, size);
        }
        close(fd);
    }
    clReleaseMemObject(b);
}

int main(void) {
    setup();
    struct {
        const char *name;
        void (*f)(void);
        int needs_udmabuf;
    } tests[] = {
        {"export_advertised", test_advertised, 0},
        {"export_alloc_info", test_alloc_info, 0},
        {"export_alloc_errors", test_alloc_export_errors, 0},
        {"export_buffer_info_and_errors", test_buffer_info_and_errors, 0},
        {"export_usm_svm_dma_buf", test_usm_export, 1},
        {"export_buffer_dma_buf", test_buffer_export, 1},
    };
    int ready = platform && device && ctx && queue && alloc_fd && mem_fd && alloc_info && mem_info;
    char why[320];
    snprintf(why, sizeof why, "needs /dev/udmabuf, absent here: %s; run in the QEMU guest: make test-guest-icd",
             no_udmabuf_why);
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (tests[i].needs_udmabuf && !have_udmabuf) ignore_test(tests[i].name, why);
        else run_test(tests[i].name, tests[i].f, ready);
    }
    close_cpu_device(ctx, queue);
    return finish_tests();
}
