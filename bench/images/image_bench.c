/*
 * image_bench: OpenCL image commands on a 1080p RGBA frame, through the ICD loader, beside libc's
 * memcpy/memset of the same bytes measured in the same process at the same time.
 *
 * Run by bench/images/run once per OpenCL implementation (OCL_ICD_VENDORS names it: dmabridge's ICD,
 * then PoCL), so each column's libc figures come from the same process as its OpenCL figures. One
 * `name value` line per figure (GB/s, GB = 1e9 bytes of the frame, 1920 x 1080 x 4 = 8 294 400):
 *
 *   copy_image_gbps        clEnqueueCopyImage of the whole frame, image to image, waited for
 *   libc_memcpy_gbps       memcpy of the same bytes (the peer of the copy and of the rect rows)
 *   fill_image_gbps        clEnqueueFillImage of the whole frame with one RGBA colour, waited for
 *   libc_memset_gbps       memset of the same bytes (the peer of the fill)
 *   read_rect_gbps         blocking clEnqueueReadImage of the frame into host memory whose rows are
 *                          HOST_PITCH bytes apart (a padded frame, as V4L2 and GStreamer pools give)
 *   write_rect_gbps        blocking clEnqueueWriteImage of the same, host to image
 *   libc_rows_gbps         the same row-by-row memcpy between a packed and a padded frame in C
 *
 * Each figure is the best of RUNS timed runs after an untimed warm-up (the first run pays for page
 * faults); every result is checked (a corner pixel and the middle one), so a figure is never that of
 * a command that did nothing. A failed call prints its name and code on stderr, exit status 1; an
 * implementation without images (CL_DEVICE_IMAGE_SUPPORT false) prints `# no images` and exits 3.
 *
 * Build: cc -O2 -o image_bench image_bench.c -lOpenCL
 */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define W 1920
#define H 1080
#define BYTES ((size_t)W * H * 4)
#define HOST_PITCH ((size_t)W * 4 + 256) /* a padded host frame: 256 bytes after each row */
#define RUNS 15

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void clobber(void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }

static void fail(const char *what, cl_int err) {
    fprintf(stderr, "image_bench: %s failed: OpenCL error %d\n", what, (int)err);
    exit(1);
}

#define CHECK(call)                        \
    do {                                   \
        cl_int err_ = (call);              \
        if (err_ != CL_SUCCESS) {          \
            fail(#call, err_);             \
        }                                  \
    } while (0)

static void expect_px(const unsigned char *frame, size_t pitch, size_t x, size_t y, const unsigned char want[4],
                      const char *what) {
    const unsigned char *p = frame + y * pitch + x * 4;
    if (memcmp(p, want, 4) != 0) {
        fprintf(stderr, "image_bench: %s: pixel (%zu, %zu) is %02x%02x%02x%02x, expected %02x%02x%02x%02x\n", what, x,
                y, p[0], p[1], p[2], p[3], want[0], want[1], want[2], want[3]);
        exit(1);
    }
}

/* Checks three pixels of a frame: first, middle, last. */
static void expect_frame(const unsigned char *frame, size_t pitch, const unsigned char want[4], const char *what) {
    expect_px(frame, pitch, 0, 0, want, what);
    expect_px(frame, pitch, W / 2, H / 2, want, what);
    expect_px(frame, pitch, W - 1, H - 1, want, what);
}

static double gbps(double s) { return (double)BYTES / s / 1e9; }

int main(void) {
    cl_platform_id platform;
    cl_device_id device;
    CHECK(clGetPlatformIDs(1, &platform, NULL));
    CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_CPU, 1, &device, NULL));
    char name[256] = "";
    CHECK(clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof name, name, NULL));
    printf("# platform: %s\n", name);
    cl_bool images = CL_FALSE;
    CHECK(clGetDeviceInfo(device, CL_DEVICE_IMAGE_SUPPORT, sizeof images, &images, NULL));
    if (!images) {
        printf("# no images\n");
        return 3;
    }
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, device, NULL, &err);
    CHECK(err);
    cl_image_format fmt = {CL_RGBA, CL_UNORM_INT8};
    cl_image_desc desc = {0};
    desc.image_type = CL_MEM_OBJECT_IMAGE2D;
    desc.image_width = W;
    desc.image_height = H;
    cl_mem a = clCreateImage(ctx, CL_MEM_READ_WRITE, &fmt, &desc, NULL, &err);
    CHECK(err);
    cl_mem b = clCreateImage(ctx, CL_MEM_READ_WRITE, &fmt, &desc, NULL, &err);
    CHECK(err);
    unsigned char *packed = malloc(BYTES), *padded = malloc(HOST_PITCH * H), *other = malloc(BYTES);
    if (!packed || !padded || !other) {
        fprintf(stderr, "image_bench: malloc failed\n");
        return 1;
    }
    memset(packed, 1, BYTES);
    memset(padded, 2, HOST_PITCH * H);
    memset(other, 3, BYTES);
    size_t origin[3] = {0, 0, 0}, region[3] = {W, H, 1};
    const unsigned char red[4] = {255, 0, 0, 255}, blue[4] = {0, 0, 255, 255};
    float redf[4] = {1, 0, 0, 1}, bluef[4] = {0, 0, 1, 1};

    double fill = 1e9, copy = 1e9, rd = 1e9, wr = 1e9, memcpy_s = 1e9, memset_s = 1e9, rows = 1e9;
    for (int run = 0; run <= RUNS; run++) {
        /* Fill a, alternating the colour so that every run writes every byte. */
        float *colour = run % 2 ? bluef : redf;
        double t = now_s();
        CHECK(clEnqueueFillImage(q, a, colour, origin, region, 0, NULL, NULL));
        CHECK(clFinish(q));
        double t_fill = now_s() - t;
        /* Copy a to b. */
        t = now_s();
        CHECK(clEnqueueCopyImage(q, a, b, origin, origin, region, 0, NULL, NULL));
        CHECK(clFinish(q));
        double t_copy = now_s() - t;
        /* b to a padded host frame, then back from it into a. */
        t = now_s();
        CHECK(clEnqueueReadImage(q, b, CL_TRUE, origin, region, HOST_PITCH, 0, padded, 0, NULL, NULL));
        double t_rd = now_s() - t;
        expect_frame(padded, HOST_PITCH, run % 2 ? blue : red, "fill, copy, read");
        t = now_s();
        CHECK(clEnqueueWriteImage(q, a, CL_TRUE, origin, region, HOST_PITCH, 0, padded, 0, NULL, NULL));
        double t_wr = now_s() - t;
        /* libc: memset, memcpy and the row-by-row copy of the same bytes. */
        t = now_s();
        memset(other, run & 0xff, BYTES);
        clobber(other);
        double t_memset = now_s() - t;
        t = now_s();
        memcpy(packed, other, BYTES);
        clobber(packed);
        double t_memcpy = now_s() - t;
        t = now_s();
        for (size_t y = 0; y < H; y++) {
            memcpy(padded + y * HOST_PITCH, packed + y * (size_t)W * 4, (size_t)W * 4);
        }
        clobber(padded);
        double t_rows = now_s() - t;
        if (run == 0) {
            continue; /* the warm-up */
        }
        fill = t_fill < fill ? t_fill : fill;
        copy = t_copy < copy ? t_copy : copy;
        rd = t_rd < rd ? t_rd : rd;
        wr = t_wr < wr ? t_wr : wr;
        memset_s = t_memset < memset_s ? t_memset : memset_s;
        memcpy_s = t_memcpy < memcpy_s ? t_memcpy : memcpy_s;
        rows = t_rows < rows ? t_rows : rows;
    }
    /* The written-back frame holds what the last run read. */
    CHECK(clEnqueueReadImage(q, a, CL_TRUE, origin, region, 0, 0, packed, 0, NULL, NULL));
    expect_frame(packed, (size_t)W * 4, RUNS % 2 ? blue : red, "write");
    printf("copy_image_gbps %.2f\nlibc_memcpy_gbps %.2f\nfill_image_gbps %.2f\nlibc_memset_gbps %.2f\n", gbps(copy),
           gbps(memcpy_s), gbps(fill), gbps(memset_s));
    printf("read_rect_gbps %.2f\nwrite_rect_gbps %.2f\nlibc_rows_gbps %.2f\n", gbps(rd), gbps(wr), gbps(rows));
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return 0;
}
