/* C tests through the loader of images that build on the core's images
 * (issue 22): image arguments of kernels — OpenCL C kernels run by PoCL
 * (image2d_t, sampler_t) on dmabridge's pages in place, and the built-in
 * yuyv_to_rgba_image — and images from imported memory: a dma-buf imported
 * as an image through clCreateImageWithProperties with
 * CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR (acquire/release bracketed), and
 * an image made over a buffer imported with clImportMemoryARM.
 *
 * Zero copy is pinned the way a second process would see it: the test
 * makes a memfd, maps it twice, gives OpenCL the first mapping
 * (CL_MEM_USE_HOST_PTR at a padded row pitch) and reads the second.
 *
 * --devices-only (tests/icd/run in the QEMU guests): only the tests that
 * need the guest's udmabuf (dma-buf imports); the PoCL ones ran on the
 * host, and under TCG PoCL compiles each kernel for tens of seconds. The
 * PoCL tests are ignored where PoCL is missing (the arm64 guest), unless
 * DMABRIDGE_EXPECT_POCL=1. */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <CL/cl_dmabridge.h>
#include <CL/cl_ext.h>
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

#define W 32
#define H 8
#define PITCH (W * 4 + 64) /* 64 bytes of padding after each RGBA row */

static const char *SRC =
    "kernel void paint(write_only image2d_t img) {\n"
    "    int x = get_global_id(0), y = get_global_id(1);\n"
    "    write_imageui(img, (int2)(x, y), (uint4)(x, y, 7, 9));\n"
    "}\n"
    "kernel void fetch(read_only image2d_t img, sampler_t s, global uint *out) {\n"
    "    int x = get_global_id(0), y = get_global_id(1);\n"
    "    uint4 p = read_imageui(img, s, (int2)(x, y));\n"
    "    out[y * get_global_size(0) + x] = p.x | p.y << 8 | p.z << 16 | p.w << 24;\n"
    "}\n";

/* A memfd of len bytes, filled with 0xEE, mapped twice: *a for OpenCL, *b to look. */
static int two_mappings(size_t len, unsigned char **a, unsigned char **b) {
    int fd = memfd_create("images-ext", 0);
    if (fd < 0 || ftruncate(fd, (off_t)len) != 0) return -1;
    *a = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    *b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (*a == MAP_FAILED || *b == MAP_FAILED) return -1;
    memset(*a, 0xee, len);
    return 0;
}

static cl_mem rgba_over(void *host, cl_int *err) {
    cl_image_format f = {CL_RGBA, CL_UNSIGNED_INT8};
    cl_image_desc d = {0};
    d.image_type = CL_MEM_OBJECT_IMAGE2D;
    d.image_width = W;
    d.image_height = H;
    d.image_row_pitch = PITCH;
    return clCreateImage(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, &f, &d, host, err);
}

static cl_program program(void) {
    cl_int err = 1;
    cl_program p = clCreateProgramWithSource(ctx, 1, &SRC, NULL, &err);
    CHECK(err == CL_SUCCESS);
    CHECK_ERR(clBuildProgram(p, 1, &device, NULL, NULL, NULL), CL_SUCCESS);
    return p;
}

/* PoCL's write_imageui lands in the memfd's pages at the image's pitch,
 * seen through the second mapping once the event completed (no read, map
 * or finish); the padding stays as it was. */
static void test_pocl_writes_an_image_in_place(void) {
    size_t len = 4096;
    unsigned char *a, *b;
    CHECK(two_mappings(len, &a, &b) == 0);
    cl_int err = 1;
    cl_mem img = rgba_over(a, &err);
    CHECK_ERR(err, CL_SUCCESS);
    cl_program p = program();
    cl_kernel k = clCreateKernel(p, "paint", &err);
    CHECK_ERR(clSetKernelArg(k, 0, sizeof img, &img), CL_SUCCESS);
    size_t g[2] = {W, H};
    cl_event ev = NULL;
    CHECK_ERR(clEnqueueNDRangeKernel(queue, k, 2, NULL, g, NULL, 0, NULL, &ev), CL_SUCCESS);
    CHECK_ERR(clWaitForEvents(1, &ev), CL_SUCCESS);
    int pixels = 1, padding = 1;
    for (int y = 0; y < H; y++) {
        for (int x = 0; x < W; x++) {
            const unsigned char *px = b + y * PITCH + x * 4;
            pixels &= px[0] == x && px[1] == y && px[2] == 7 && px[3] == 9;
        }
        for (int i = W * 4; i < PITCH; i++) padding &= b[y * PITCH + i] == 0xee;
    }
    CHECK(pixels);
    CHECK(padding);
    clReleaseEvent(ev);
    clReleaseKernel(k);
    clReleaseProgram(p);
    clReleaseMemObject(img);
    munmap(a, len);
    munmap(b, len);
}

/* What the second mapping writes is what read_imageui with a sampler
 * returns: PoCL reads the same pages. */
static void test_pocl_reads_an_image_through_a_sampler(void) {
    size_t len = 4096;
    unsigned char *a, *b;
    CHECK(two_mappings(len, &a, &b) == 0);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) memcpy(b + y * PITCH + x * 4, (unsigned char[]){1, 2, (unsigned char)x, (unsigned char)y}, 4);
    cl_int err = 1;
    cl_mem img = rgba_over(a, &err);
    cl_mem out = clCreateBuffer(ctx, CL_MEM_READ_WRITE, W * H * 4, NULL, &err);
    cl_sampler s = clCreateSampler(ctx, CL_FALSE, CL_ADDRESS_NONE, CL_FILTER_NEAREST, &err);
    CHECK_ERR(err, CL_SUCCESS);
    cl_program p = program();
    cl_kernel k = clCreateKernel(p, "fetch", &err);
    CHECK_ERR(clSetKernelArg(k, 0, sizeof img, &img), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(k, 1, sizeof s, &s), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(k, 2, sizeof out, &out), CL_SUCCESS);
    size_t g[2] = {W, H};
    CHECK_ERR(clEnqueueNDRangeKernel(queue, k, 2, NULL, g, NULL, 0, NULL, NULL), CL_SUCCESS);
    cl_uint got[W * H];
    CHECK_ERR(clEnqueueReadBuffer(queue, out, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL), CL_SUCCESS);
    int ok = 1;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) ok &= got[y * W + x] == (1u | 2u << 8 | (cl_uint)x << 16 | (cl_uint)y << 24);
    CHECK(ok);
    clReleaseKernel(k);
    clReleaseProgram(p);
    clReleaseSampler(s);
    clReleaseMemObject(out);
    clReleaseMemObject(img);
    munmap(a, len);
    munmap(b, len);
}

/* clSetKernelArg's rules for image and sampler arguments of kernels from
 * source. */
static void test_pocl_argument_rules(void) {
    cl_int err = 1;
    cl_program p = program();
    cl_kernel k = clCreateKernel(p, "fetch", &err);
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4096, NULL, &err);
    cl_image_format rg = {CL_RG, CL_UNORM_INT8}, rgba = {CL_RGBA, CL_UNORM_INT8};
    cl_image_desc d2 = {0}, d3 = {0};
    d2.image_type = CL_MEM_OBJECT_IMAGE2D;
    d2.image_width = d2.image_height = 8;
    d3 = d2;
    d3.image_type = CL_MEM_OBJECT_IMAGE3D;
    d3.image_depth = 2;
    cl_mem rg_img = clCreateImage(ctx, CL_MEM_READ_WRITE, &rg, &d2, NULL, &err);
    CHECK_ERR(err, CL_SUCCESS);
    cl_mem img3 = clCreateImage(ctx, CL_MEM_READ_WRITE, &rgba, &d3, NULL, &err);
    CHECK_ERR(err, CL_SUCCESS);
    cl_mem img2 = clCreateImage(ctx, CL_MEM_READ_WRITE, &rgba, &d2, NULL, &err);
    CHECK_ERR(clSetKernelArg(k, 0, sizeof buf, &buf), CL_INVALID_MEM_OBJECT);      /* a buffer for an image */
    CHECK_ERR(clSetKernelArg(k, 0, sizeof img3, &img3), CL_INVALID_MEM_OBJECT);    /* image3d for image2d_t */
    CHECK_ERR(clSetKernelArg(k, 0, sizeof rg_img, &rg_img), CL_INVALID_ARG_VALUE); /* PoCL has no CL_RG */
    CHECK_ERR(clSetKernelArg(k, 0, 4, &img2), CL_INVALID_ARG_SIZE);
    CHECK_ERR(clSetKernelArg(k, 0, sizeof img2, NULL), CL_INVALID_MEM_OBJECT);
    CHECK_ERR(clSetKernelArg(k, 0, sizeof img2, &img2), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(k, 2, sizeof img2, &img2), CL_INVALID_MEM_OBJECT); /* an image for a pointer */
    cl_sampler none = NULL;
    CHECK_ERR(clSetKernelArg(k, 1, sizeof none, &none), CL_INVALID_SAMPLER);
    CHECK_ERR(clSetKernelArg(k, 1, sizeof buf, NULL), CL_INVALID_SAMPLER);
    CHECK_ERR(clSetKernelArg(k, 1, 2, &none), CL_INVALID_ARG_SIZE);
    clReleaseMemObject(img2);
    clReleaseMemObject(img3);
    clReleaseMemObject(rg_img);
    clReleaseMemObject(buf);
    clReleaseKernel(k);
    clReleaseProgram(p);
}

/* The built-in yuyv_to_rgba_image: a YUYV image in (a padded frame over a
 * buffer, cl_khr_image2d_from_buffer), an RGBA image out, the same bytes as
 * yuyv_to_rgba_strided over the same memory; a buffer where an image goes
 * is refused. */
static void test_builtin_image_form(void) {
    enum { SP = W * 2 + 16, DP = W * 4 };
    cl_int err = 1;
    unsigned char frame[SP * H];
    for (size_t i = 0; i < sizeof frame; i++) frame[i] = (unsigned char)(i * 13 % 241);
    cl_mem src = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof frame, frame, &err);
    cl_mem out_s = clCreateBuffer(ctx, CL_MEM_READ_WRITE, DP * H, NULL, &err);
    cl_image_format yuyv = {CL_YUYV_INTEL, CL_UNORM_INT8}, rgba = {CL_RGBA, CL_UNORM_INT8};
    cl_image_desc d = {0};
    d.image_type = CL_MEM_OBJECT_IMAGE2D;
    d.image_width = W;
    d.image_height = H;
    d.image_row_pitch = SP;
    d.mem_object = src;
    cl_mem in = clCreateImage(ctx, CL_MEM_READ_ONLY, &yuyv, &d, NULL, &err);
    CHECK_ERR(err, CL_SUCCESS);
    d.image_row_pitch = 0;
    d.mem_object = NULL;
    cl_mem out_i = clCreateImage(ctx, CL_MEM_READ_WRITE, &rgba, &d, NULL, &err);
    CHECK_ERR(err, CL_SUCCESS);
    cl_program p = clCreateProgramWithBuiltInKernels(ctx, 1, &device, "yuyv_to_rgba_image;yuyv_to_rgba_strided", &err);
    CHECK_ERR(err, CL_SUCCESS);
    cl_kernel ki = clCreateKernel(p, "yuyv_to_rgba_image", &err), ks = clCreateKernel(p, "yuyv_to_rgba_strided", &err);
    CHECK_ERR(clSetKernelArg(ki, 0, sizeof src, &src), CL_INVALID_MEM_OBJECT);
    CHECK_ERR(clSetKernelArg(ki, 0, sizeof in, &in), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(ki, 1, sizeof out_i, &out_i), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(ks, 0, sizeof in, &in), CL_INVALID_MEM_OBJECT); /* an image for a pointer */
    cl_uint dims[4] = {W, H, SP, DP};
    CHECK_ERR(clSetKernelArg(ks, 0, sizeof src, &src), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(ks, 1, sizeof out_s, &out_s), CL_SUCCESS);
    for (cl_uint i = 0; i < 4; i++) CHECK_ERR(clSetKernelArg(ks, 2 + i, sizeof dims[i], &dims[i]), CL_SUCCESS);
    size_t g = H;
    CHECK_ERR(clEnqueueNDRangeKernel(queue, ki, 1, NULL, &g, NULL, 0, NULL, NULL), CL_SUCCESS);
    CHECK_ERR(clEnqueueNDRangeKernel(queue, ks, 1, NULL, &g, NULL, 0, NULL, NULL), CL_SUCCESS);
    static unsigned char by_image[DP * H], by_buffer[DP * H];
    size_t origin[3] = {0, 0, 0}, region[3] = {W, H, 1};
    CHECK_ERR(clEnqueueReadImage(queue, out_i, CL_TRUE, origin, region, 0, 0, by_image, 0, NULL, NULL), CL_SUCCESS);
    CHECK_ERR(clEnqueueReadBuffer(queue, out_s, CL_TRUE, 0, sizeof by_buffer, by_buffer, 0, NULL, NULL), CL_SUCCESS);
    CHECK(memcmp(by_image, by_buffer, sizeof by_image) == 0);
    CHECK(by_image[3] == 255);
    clReleaseKernel(ki);
    clReleaseKernel(ks);
    clReleaseProgram(p);
    clReleaseMemObject(in);
    clReleaseMemObject(out_i);
    clReleaseMemObject(out_s);
    clReleaseMemObject(src);
}

/* clCreateImageWithProperties' external-memory rules that need no dma-buf,
 * and acquire of an image that was not imported. */
static void test_khr_image_rules(void) {
    cl_int err = 1;
    cl_image_format rgba = {CL_RGBA, CL_UNORM_INT8};
    cl_image_desc d = {0};
    d.image_type = CL_MEM_OBJECT_IMAGE2D;
    d.image_width = W;
    d.image_height = H;
    int memfd = memfd_create("not-a-dma-buf", 0);
    CHECK(ftruncate(memfd, 4096) == 0);
    cl_mem_properties not_dma_buf[] = {CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR, (cl_mem_properties)memfd, 0};
    CHECK(clCreateImageWithProperties(ctx, not_dma_buf, CL_MEM_READ_WRITE, &rgba, &d, NULL, &err) == NULL);
    CHECK_ERR(err, CL_INVALID_VALUE);
    cl_mem_properties unknown[] = {0x4242, 1, 0};
    CHECK(clCreateImageWithProperties(ctx, unknown, CL_MEM_READ_WRITE, &rgba, &d, NULL, &err) == NULL);
    CHECK_ERR(err, CL_INVALID_PROPERTY);
    cl_mem_properties negative[] = {CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR, (cl_mem_properties)-1, 0};
    CHECK(clCreateImageWithProperties(ctx, negative, CL_MEM_READ_WRITE, &rgba, &d, NULL, &err) == NULL);
    CHECK_ERR(err, CL_INVALID_VALUE);
    cl_mem plain = clCreateImageWithProperties(ctx, NULL, CL_MEM_READ_WRITE, &rgba, &d, NULL, &err);
    CHECK_ERR(err, CL_SUCCESS);
    clEnqueueAcquireExternalMemObjectsKHR_fn acquire = EXT_FN(platform, clEnqueueAcquireExternalMemObjectsKHR);
    CHECK(acquire != NULL);
    if (acquire) CHECK_ERR(acquire(queue, 1, &plain, 0, NULL, NULL), CL_INVALID_MEM_OBJECT);
    clReleaseMemObject(plain);
    close(memfd);
}

/* Guest (udmabuf): a buffer's pages exported as a dma-buf, imported as an
 * image at a padded pitch the Khronos way and filled between acquire and
 * release; then imported with clImportMemoryARM and an image made over that
 * buffer, filled again: an mmap of the dma-buf (a second mapping of the
 * same pages) holds the pixels at the pitch both times, the padding
 * untouched. */
static void test_dma_buf_imported_as_image(void) {
    clGetMemObjectDmaBufFdDMABRIDGE_fn export_fd = EXT_FN(platform, clGetMemObjectDmaBufFdDMABRIDGE);
    clEnqueueAcquireExternalMemObjectsKHR_fn acquire = EXT_FN(platform, clEnqueueAcquireExternalMemObjectsKHR);
    clEnqueueReleaseExternalMemObjectsKHR_fn release = EXT_FN(platform, clEnqueueReleaseExternalMemObjectsKHR);
    __typeof__(&clImportMemoryARM) import =
        (__typeof__(&clImportMemoryARM))clGetExtensionFunctionAddressForPlatform(platform, "clImportMemoryARM");
    CHECK(export_fd && acquire && release && import);
    if (!(export_fd && acquire && release && import)) return;
    cl_int err = 1;
    size_t n = 4096;
    unsigned char pad[4096];
    memset(pad, 0xee, sizeof pad);
    cl_mem pages = clCreateBuffer(ctx, CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR, n, pad, &err);
    int fd = -1;
    CHECK_ERR(export_fd(pages, NULL, &fd), CL_SUCCESS);
    if (fd < 0) {
        clReleaseMemObject(pages);
        return;
    }
    unsigned char *frame = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0);
    CHECK(frame != MAP_FAILED);
    cl_image_format rgba = {CL_RGBA, CL_UNORM_INT8};
    cl_image_desc d = {0};
    d.image_type = CL_MEM_OBJECT_IMAGE2D;
    d.image_width = W;
    d.image_height = H;
    d.image_row_pitch = PITCH;
    cl_mem_properties props[] = {CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR, (cl_mem_properties)fd, 0};
    cl_mem img = clCreateImageWithProperties(ctx, props, CL_MEM_READ_WRITE, &rgba, &d, NULL, &err);
    CHECK_ERR(err, CL_SUCCESS);
    size_t pitch = 0;
    CHECK_ERR(clGetImageInfo(img, CL_IMAGE_ROW_PITCH, sizeof pitch, &pitch, NULL), CL_SUCCESS);
    CHECK(pitch == PITCH);
    size_t origin[3] = {0, 0, 0}, region[3] = {W, H, 1};
    float red[4] = {1, 0, 0, 1}, blue[4] = {0, 0, 1, 1};
    CHECK_ERR(acquire(queue, 1, &img, 0, NULL, NULL), CL_SUCCESS);
    CHECK_ERR(clEnqueueFillImage(queue, img, red, origin, region, 0, NULL, NULL), CL_SUCCESS);
    CHECK_ERR(release(queue, 1, &img, 0, NULL, NULL), CL_SUCCESS);
    CHECK_ERR(clFinish(queue), CL_SUCCESS);
    int ok = frame != MAP_FAILED;
    for (int y = 0; ok && y < H; y++) {
        ok &= frame[y * PITCH] == 255 && frame[y * PITCH + 2] == 0 && frame[y * PITCH + (W - 1) * 4 + 3] == 255;
        ok &= frame[y * PITCH + W * 4] == 0xee;
    }
    CHECK(ok);
    cl_import_properties_arm arm[] = {CL_IMPORT_TYPE_ARM, CL_IMPORT_TYPE_DMA_BUF_ARM, 0};
    cl_mem b = import(ctx, CL_MEM_READ_WRITE, arm, &fd, n, &err);
    CHECK_ERR(err, CL_SUCCESS);
    d.mem_object = b;
    cl_mem over = clCreateImage(ctx, CL_MEM_READ_WRITE, &rgba, &d, NULL, &err);
    CHECK_ERR(err, CL_SUCCESS);
    CHECK_ERR(clEnqueueFillImage(queue, over, blue, origin, region, 0, NULL, NULL), CL_SUCCESS);
    CHECK_ERR(clFinish(queue), CL_SUCCESS);
    ok = frame != MAP_FAILED;
    for (int y = 0; ok && y < H; y++)
        ok &= frame[y * PITCH] == 0 && frame[y * PITCH + 2] == 255 && frame[y * PITCH + W * 4] == 0xee;
    CHECK(ok);
    if (frame != MAP_FAILED) munmap(frame, n);
    clReleaseMemObject(over);
    clReleaseMemObject(b);
    clReleaseMemObject(img);
    clReleaseMemObject(pages);
    close(fd);
}

static const struct test_case pocl_tests[] = {
    {"images_ext::pocl_writes_an_image_in_place", test_pocl_writes_an_image_in_place},
    {"images_ext::pocl_reads_an_image_through_a_sampler", test_pocl_reads_an_image_through_a_sampler},
    {"images_ext::pocl_argument_rules", test_pocl_argument_rules},
};

static const struct test_case host_tests[] = {
    {"images_ext::builtin_image_form", test_builtin_image_form},
    {"images_ext::khr_image_rules", test_khr_image_rules},
};

int main(int argc, char **argv) {
    int devices_only = argc > 1 && strcmp(argv[1], "--devices-only") == 0;
    open_cpu_device(&platform, &device, &ctx, &queue);
    int ready = queue != NULL;
    cl_bool comp = 0;
    if (device) clGetDeviceInfo(device, CL_DEVICE_COMPILER_AVAILABLE, sizeof comp, &comp, NULL);
    const char *expect = getenv("DMABRIDGE_EXPECT_POCL");
    int pocl = comp || (expect && strcmp(expect, "1") == 0);
    for (size_t i = 0; i < sizeof pocl_tests / sizeof pocl_tests[0]; i++) {
        if (devices_only) ignore_test(pocl_tests[i].name, "--devices-only: it runs on the host (tests/icd/run)");
        else if (!pocl) ignore_test(pocl_tests[i].name, "no PoCL here");
        else run_test(pocl_tests[i].name, pocl_tests[i].f, ready);
    }
    if (devices_only) {
        for (size_t i = 0; i < sizeof host_tests / sizeof host_tests[0]; i++)
            ignore_test(host_tests[i].name, "--devices-only: it runs on the host (tests/icd/run)");
    } else {
        RUN_TESTS(host_tests, ready);
    }
    /* The dma-buf import needs udmabuf (the export): the guests have it. */
    int fd = open("/dev/udmabuf", O_RDWR | O_CLOEXEC), exports = fd >= 0;
    if (fd >= 0) close(fd);
    if (ready && !exports) ignore_test("images_ext::dma_buf_imported_as_image", "no /dev/udmabuf: runs in the guests");
    else run_test("images_ext::dma_buf_imported_as_image", test_dma_buf_imported_as_image, ready);
    close_cpu_device(ctx, queue);
    return finish_tests();
}
