/* The README's C example: USM allocate, fill, copy, export as a dma-buf.
 *
 * Build and run against dmabridge without installing it:
 *   make icd
 *   gcc -Iinclude -o usm_dmabuf examples/c/usm_dmabuf.c -lOpenCL
 *   OCL_ICD_VENDORS=$PWD/target/release/dmabridge.icd ./usm_dmabuf
 *
 * The export needs /dev/udmabuf; where there is none (most development
 * machines) the program says so and still exits 0 after the copy. In the
 * QEMU guest: qemu/run-in-guest -- env OCL_ICD_VENDORS=... ./usm_dmabuf
 * tests/icd/run compiles and runs it, so it stays true. */
#define _GNU_SOURCE /* mmap, sysconf under -std=c11 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <CL/cl_dmabridge.h>
#include <CL/cl_ext.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define TRY(call)                                                            \
    do {                                                                     \
        cl_int err_ = (call);                                                \
        if (err_ != CL_SUCCESS) {                                            \
            fprintf(stderr, "%s failed: %d\n", #call, err_);                 \
            return 1;                                                        \
        }                                                                    \
    } while (0)
/* Extension entry points come from the platform, by name. */
#define EXT(platform, name) ((name##_fn)clGetExtensionFunctionAddressForPlatform(platform, #name))

static cl_platform_id dmabridge_platform(void) {
    cl_platform_id ids[16];
    cl_uint n = 0;
    if (clGetPlatformIDs(16, ids, &n) != CL_SUCCESS) return NULL;
    for (cl_uint i = 0; i < n && i < 16; i++) {
        char name[64] = "";
        clGetPlatformInfo(ids[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        if (strcmp(name, "dmabridge") == 0) return ids[i];
    }
    return NULL;
}

int main(void) {
    cl_platform_id platform = dmabridge_platform();
    if (!platform) {
        fprintf(stderr, "no dmabridge platform: set OCL_ICD_VENDORS to target/<profile>/dmabridge.icd (make icd)\n");
        return 1;
    }
    cl_device_id device;
    TRY(clGetDeviceIDs(platform, CL_DEVICE_TYPE_CPU, 1, &device, NULL));
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    TRY(err);
    cl_command_queue queue = clCreateCommandQueueWithProperties(ctx, device, NULL, &err);
    TRY(err);

    clHostMemAllocINTEL_fn host_alloc = EXT(platform, clHostMemAllocINTEL);
    clSharedMemAllocINTEL_fn shared_alloc = EXT(platform, clSharedMemAllocINTEL);
    clEnqueueMemFillINTEL_fn fill = EXT(platform, clEnqueueMemFillINTEL);
    clEnqueueMemcpyINTEL_fn memcpy_ = EXT(platform, clEnqueueMemcpyINTEL);
    clMemBlockingFreeINTEL_fn blocking_free = EXT(platform, clMemBlockingFreeINTEL);
    clGetMemAllocDmaBufFdDMABRIDGE_fn export_fd = EXT(platform, clGetMemAllocDmaBufFdDMABRIDGE);
    if (!host_alloc || !shared_alloc || !fill || !memcpy_ || !blocking_free || !export_fd) {
        fprintf(stderr, "an extension entry point is missing\n");
        return 1;
    }

    /* A whole page (dmabridge places a page-sized allocation on a page of its
     * own), so that the dma-buf holds this allocation alone. */
    size_t size = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char *frame = host_alloc(ctx, NULL, size, 0, &err);
    TRY(err);
    unsigned char *copy = shared_alloc(ctx, device, NULL, size, 0, &err);
    TRY(err);
    const cl_uint pattern = 0x11223344;
    TRY(fill(queue, frame, &pattern, sizeof pattern, size, 0, NULL, NULL));
    TRY(memcpy_(queue, CL_TRUE, copy, frame, size, 0, NULL, NULL)); /* in order: after the fill */
    printf("copy[0..4] = %02x %02x %02x %02x\n", copy[0], copy[1], copy[2], copy[3]);

    int fd = -1;
    err = export_fd(ctx, frame, NULL, &fd);
    if (err == CL_INVALID_OPERATION) {
        printf("no dma-buf export here (no /dev/udmabuf): run it in the QEMU guest (qemu/run-in-guest)\n");
    } else {
        TRY(err);
        /* Any importer (V4L2, DRM, another process) sees the same pages. */
        unsigned char *view = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
        if (view == MAP_FAILED) {
            perror("mmap of the dma-buf");
            return 1;
        }
        printf("dma-buf fd %d, first bytes %02x %02x %02x %02x\n", fd, view[0], view[1], view[2], view[3]);
        int same = memcmp(view, copy, size) == 0;
        munmap(view, size);
        close(fd);
        if (!same) {
            fprintf(stderr, "the dma-buf does not show the allocation's bytes\n");
            return 1;
        }
    }

    TRY(blocking_free(ctx, frame));
    TRY(blocking_free(ctx, copy));
    clReleaseCommandQueue(queue);
    clReleaseContext(ctx);
    return 0;
}
