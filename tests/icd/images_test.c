/* C tests of the dmabridge ICD's images and samplers, through the real
 * loader, on the CPU device: every image type created, written, read back,
 * copied, filled and mapped; the fill bytes of every supported format
 * against values worked out by hand from the OpenCL C conversion rules;
 * CL_MEM_USE_HOST_PTR zero copy; 1D image buffers over a buffer's bytes;
 * NV12's layout; samplers; the main error codes. The exhaustive spec suite
 * is the acceptance tests'. Closing line: "N passed, N failed". */
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

static void setup(void) { open_cpu_device(&platform, &device, &ctx, &queue); }

static cl_mem make(cl_mem_object_type t, size_t w, size_t h, size_t d, cl_image_format f, cl_mem_flags flags,
                   void *host, size_t row_pitch, cl_int *err) {
    cl_image_desc desc = {.image_type = t, .image_width = w, .image_row_pitch = row_pitch};
    if (t == CL_MEM_OBJECT_IMAGE1D_ARRAY) desc.image_array_size = h;
    if (t == CL_MEM_OBJECT_IMAGE2D || t == CL_MEM_OBJECT_IMAGE2D_ARRAY || t == CL_MEM_OBJECT_IMAGE3D)
        desc.image_height = h;
    if (t == CL_MEM_OBJECT_IMAGE2D_ARRAY) desc.image_array_size = d;
    if (t == CL_MEM_OBJECT_IMAGE3D) desc.image_depth = d;
    return clCreateImage(ctx, flags, &f, &desc, host, err);
}

static void test_device_and_formats(void) {
    cl_bool images = CL_FALSE;
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_IMAGE_SUPPORT, sizeof images, &images, NULL), CL_SUCCESS);
    CHECK(images == CL_TRUE);
    size_t w = 0, d3 = 0, arr = 0;
    cl_uint samplers = 0, reads = 0;
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_IMAGE2D_MAX_WIDTH, sizeof w, &w, NULL), CL_SUCCESS);
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_IMAGE3D_MAX_DEPTH, sizeof d3, &d3, NULL), CL_SUCCESS);
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_IMAGE_MAX_ARRAY_SIZE, sizeof arr, &arr, NULL), CL_SUCCESS);
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_MAX_SAMPLERS, sizeof samplers, &samplers, NULL), CL_SUCCESS);
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_MAX_READ_IMAGE_ARGS, sizeof reads, &reads, NULL), CL_SUCCESS);
    CHECK(w >= 8192 && d3 >= 2048 && arr >= 2048 && samplers >= 16 && reads >= 128); /* full-profile minimums */
    cl_uint n = 0;
    CHECK_ERR(clGetSupportedImageFormats(ctx, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, 0, NULL, &n), CL_SUCCESS);
    CHECK(n == 42);
    cl_image_format f[64];
    CHECK_ERR(clGetSupportedImageFormats(ctx, CL_MEM_KERNEL_READ_AND_WRITE, CL_MEM_OBJECT_IMAGE2D, 64, f, &n),
              CL_SUCCESS);
    int nv12 = 0, yuyv = 0, bgra = 0;
    for (cl_uint i = 0; i < n && i < 64; i++) {
        nv12 |= f[i].image_channel_order == CL_NV12_INTEL && f[i].image_channel_data_type == CL_UNORM_INT8;
        yuyv |= f[i].image_channel_order == CL_YUYV_INTEL && f[i].image_channel_data_type == CL_UNORM_INT8;
        bgra |= f[i].image_channel_order == CL_BGRA && f[i].image_channel_data_type == CL_UNORM_INT8;
    }
    CHECK(nv12 && yuyv && bgra);
    CHECK_ERR(clGetSupportedImageFormats(ctx, CL_MEM_READ_ONLY, CL_MEM_OBJECT_IMAGE3D, 0, NULL, &n), CL_SUCCESS);
    CHECK(n == 38); /* no depth or video formats */
    CHECK_ERR(clGetSupportedImageFormats(ctx, CL_MEM_READ_ONLY, CL_MEM_OBJECT_BUFFER, 0, NULL, &n), CL_INVALID_VALUE);
}

/* Each type: write a pattern, read it back, copy it to a second image,
 * read the copy, fill a corner, map and check through the map. */
static void test_each_type_round_trips(void) {
    const cl_mem_object_type types[] = {CL_MEM_OBJECT_IMAGE1D,       CL_MEM_OBJECT_IMAGE1D_ARRAY,
                                        CL_MEM_OBJECT_IMAGE2D,       CL_MEM_OBJECT_IMAGE2D_ARRAY,
                                        CL_MEM_OBJECT_IMAGE3D,       CL_MEM_OBJECT_IMAGE1D_BUFFER};
    const cl_image_format rgba = {CL_RGBA, CL_UNSIGNED_INT8};
    for (size_t t = 0; t < 6; t++) {
        cl_int err = 1;
        size_t w = 16, h = 1, d = 1;
        cl_mem_object_type ty = types[t];
        if (ty == CL_MEM_OBJECT_IMAGE1D_ARRAY || ty == CL_MEM_OBJECT_IMAGE2D) h = 5;
        if (ty == CL_MEM_OBJECT_IMAGE2D_ARRAY || ty == CL_MEM_OBJECT_IMAGE3D) h = 5, d = 3;
        cl_mem buf = NULL, a, b;
        if (ty == CL_MEM_OBJECT_IMAGE1D_BUFFER) {
            buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, w * 4, NULL, &err);
            cl_image_desc desc = {.image_type = ty, .image_width = w, .mem_object = buf};
            a = clCreateImage(ctx, 0, &rgba, &desc, NULL, &err);
            CHECK(a != NULL && err == CL_SUCCESS);
            b = make(CL_MEM_OBJECT_IMAGE1D, w, 1, 1, rgba, 0, NULL, 0, &err);
        } else {
            a = make(ty, w, h, d, rgba, 0, NULL, 0, &err);
            CHECK(a != NULL && err == CL_SUCCESS);
            b = make(ty, w, h, d, rgba, 0, NULL, 0, &err);
        }
        CHECK(b != NULL && err == CL_SUCCESS);
        if (!a || !b) continue;
        cl_mem_object_type got = 0;
        CHECK_ERR(clGetMemObjectInfo(a, CL_MEM_TYPE, sizeof got, &got, NULL), CL_SUCCESS);
        CHECK(got == ty);
        size_t rp = 0, sp = 9, width = 0, esize = 0;
        CHECK_ERR(clGetImageInfo(a, CL_IMAGE_ROW_PITCH, sizeof rp, &rp, NULL), CL_SUCCESS);
        CHECK_ERR(clGetImageInfo(a, CL_IMAGE_SLICE_PITCH, sizeof sp, &sp, NULL), CL_SUCCESS);
        CHECK_ERR(clGetImageInfo(a, CL_IMAGE_WIDTH, sizeof width, &width, NULL), CL_SUCCESS);
        CHECK_ERR(clGetImageInfo(a, CL_IMAGE_ELEMENT_SIZE, sizeof esize, &esize, NULL), CL_SUCCESS);
        CHECK(rp == w * 4 && width == w && esize == 4);
        if (ty == CL_MEM_OBJECT_IMAGE1D_ARRAY) CHECK(sp == rp);
        else if (ty == CL_MEM_OBJECT_IMAGE2D_ARRAY || ty == CL_MEM_OBJECT_IMAGE3D) CHECK(sp == rp * h);
        else CHECK(sp == 0);
        cl_uint mips = 9;
        CHECK_ERR(clGetImageInfo(a, CL_IMAGE_NUM_MIP_LEVELS, sizeof mips, &mips, NULL), CL_SUCCESS);
        CHECK(mips == 0);
        cl_mem ib = (cl_mem)1;
        CHECK_ERR(clGetImageInfo(a, CL_IMAGE_BUFFER, sizeof ib, &ib, NULL), CL_SUCCESS);
        CHECK(ib == buf);
        size_t n = w * h * d * 4, region[3] = {w, h, d}, origin[3] = {0, 0, 0};
        uint8_t *in = malloc(n), *out = malloc(n);
        for (size_t i = 0; i < n; i++) in[i] = (uint8_t)(i * 7 + t);
        CHECK_ERR(clEnqueueWriteImage(queue, a, CL_TRUE, origin, region, 0, 0, in, 0, NULL, NULL), CL_SUCCESS);
        memset(out, 0, n);
        CHECK_ERR(clEnqueueReadImage(queue, a, CL_TRUE, origin, region, 0, 0, out, 0, NULL, NULL), CL_SUCCESS);
        CHECK(memcmp(in, out, n) == 0);
        if (buf) { /* the image's pixels are the buffer's bytes */
            memset(out, 0, n);
            CHECK_ERR(clEnqueueReadBuffer(queue, buf, CL_TRUE, 0, n, out, 0, NULL, NULL), CL_SUCCESS);
            CHECK(memcmp(in, out, n) == 0);
        }
        CHECK_ERR(clEnqueueCopyImage(queue, a, b, origin, origin, region, 0, NULL, NULL), CL_SUCCESS);
        memset(out, 0, n);
        CHECK_ERR(clEnqueueReadImage(queue, b, CL_TRUE, origin, region, 0, 0, out, 0, NULL, NULL), CL_SUCCESS);
        CHECK(memcmp(in, out, n) == 0);
        /* Fill the last pixel, read it back. */
        size_t last[3] = {w - 1, h - 1, d - 1}, one[3] = {1, 1, 1};
        cl_uint color[4] = {1, 2, 3, 4};
        CHECK_ERR(clEnqueueFillImage(queue, b, color, last, one, 0, NULL, NULL), CL_SUCCESS);
        uint8_t px[4] = {0};
        CHECK_ERR(clEnqueueReadImage(queue, b, CL_TRUE, last, one, 0, 0, px, 0, NULL, NULL), CL_SUCCESS);
        CHECK(px[0] == 1 && px[1] == 2 && px[2] == 3 && px[3] == 4);
        /* Map the whole image: the pixels at the pitches the map returns. */
        size_t mrp = 0, msp = 0;
        uint8_t *p = clEnqueueMapImage(queue, a, CL_TRUE, CL_MAP_READ, origin, region, &mrp, &msp, 0, NULL, NULL, &err);
        CHECK(p != NULL && err == CL_SUCCESS && mrp == rp);
        if (p) {
            size_t stride = ty == CL_MEM_OBJECT_IMAGE1D_ARRAY ? msp : mrp, layer = msp;
            int same = 1;
            for (size_t z = 0; z < d; z++)
                for (size_t y = 0; y < h; y++)
                    same &= memcmp(p + z * layer + y * stride, in + (z * h + y) * w * 4, w * 4) == 0;
            CHECK(same);
            cl_uint maps = 0;
            CHECK_ERR(clGetMemObjectInfo(a, CL_MEM_MAP_COUNT, sizeof maps, &maps, NULL), CL_SUCCESS);
            CHECK(maps == 1);
            CHECK_ERR(clEnqueueUnmapMemObject(queue, a, p, 0, NULL, NULL), CL_SUCCESS);
        }
        CHECK_ERR(clFinish(queue), CL_SUCCESS);
        free(in);
        free(out);
        clReleaseMemObject(a);
        clReleaseMemObject(b);
        if (buf) clReleaseMemObject(buf);
    }
}

/* The expected channel values (r, g, b, a) of the fill colours below for
 * each channel type, worked out from OpenCL C's conversion rules:
 * float {0.25, 0.5, 0.75, 1}: UNORM8 rte(x*255), UNORM16 rte(x*65535),
 * SNORM8 rte(x*127), SNORM16 rte(x*32767), half, float; int {-1, 200,
 * -40000, 70000} saturated; uint {1, 300, 70000, 0xffffffff} saturated. */
static int expected(cl_image_format f, uint8_t *out) {
    static const uint8_t u8[4] = {64, 128, 191, 255}, s8[4] = {32, 64, 95, 127}, srgb8[4] = {137, 188, 225, 255};
    static const uint16_t u16[4] = {16384, 32768, 49151, 65535}, s16[4] = {8192, 16384, 24575, 32767},
                          h16[4] = {0x3400, 0x3800, 0x3a00, 0x3c00};
    static const float f32[4] = {0.25f, 0.5f, 0.75f, 1.0f};
    static const int8_t i8[4] = {-1, 127, -128, 127};
    static const int16_t i16[4] = {-1, 200, -32768, 32767};
    static const int32_t i32[4] = {-1, 200, -40000, 70000};
    static const uint8_t ui8[4] = {1, 255, 255, 255};
    static const uint16_t ui16[4] = {1, 300, 65535, 65535};
    static const uint32_t ui32[4] = {1, 300, 70000, 0xffffffffu};
    int map[4], nch;
    switch (f.image_channel_order) {
    case CL_R: case CL_DEPTH: nch = 1, map[0] = 0; break;
    case CL_RG: nch = 2, map[0] = 0, map[1] = 1; break;
    case CL_RGBA: case CL_sRGBA: nch = 4, map[0] = 0, map[1] = 1, map[2] = 2, map[3] = 3; break;
    case CL_BGRA: nch = 4, map[0] = 2, map[1] = 1, map[2] = 0, map[3] = 3; break;
    default: return -1;
    }
    size_t n = 0;
    for (int c = 0; c < nch; c++) {
        int k = map[c];
        switch (f.image_channel_data_type) {
        case CL_UNORM_INT8: out[n++] = f.image_channel_order == CL_sRGBA ? srgb8[k] : u8[k]; break;
        case CL_SNORM_INT8: out[n++] = (uint8_t)s8[k]; break;
        case CL_SIGNED_INT8: out[n++] = (uint8_t)i8[k]; break;
        case CL_UNSIGNED_INT8: out[n++] = ui8[k]; break;
        case CL_UNORM_INT16: memcpy(out + n, &u16[k], 2), n += 2; break;
        case CL_SNORM_INT16: memcpy(out + n, &s16[k], 2), n += 2; break;
        case CL_HALF_FLOAT: memcpy(out + n, &h16[k], 2), n += 2; break;
        case CL_SIGNED_INT16: memcpy(out + n, &i16[k], 2), n += 2; break;
        case CL_UNSIGNED_INT16: memcpy(out + n, &ui16[k], 2), n += 2; break;
        case CL_FLOAT: memcpy(out + n, &f32[k], 4), n += 4; break;
        case CL_SIGNED_INT32: memcpy(out + n, &i32[k], 4), n += 4; break;
        case CL_UNSIGNED_INT32: memcpy(out + n, &ui32[k], 4), n += 4; break;
        default: return -1;
        }
    }
    return (int)n;
}

static void test_fill_bytes_of_every_format(void) {
    cl_image_format f[64];
    cl_uint n = 0;
    CHECK_ERR(clGetSupportedImageFormats(ctx, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, 64, f, &n), CL_SUCCESS);
    const float fc[4] = {0.25f, 0.5f, 0.75f, 1.0f};
    const cl_int ic[4] = {-1, 200, -40000, 70000};
    const cl_uint uc[4] = {1, 300, 70000, 0xffffffffu};
    int checked = 0;
    for (cl_uint i = 0; i < n && i < 64; i++) {
        cl_int err = 1;
        cl_mem img = make(CL_MEM_OBJECT_IMAGE2D, 4, 2, 1, f[i], 0, NULL, 0, &err);
        CHECK(img != NULL && err == CL_SUCCESS);
        if (!img) continue;
        const void *color = fc;
        switch (f[i].image_channel_data_type) {
        case CL_SIGNED_INT8: case CL_SIGNED_INT16: case CL_SIGNED_INT32: color = ic; break;
        case CL_UNSIGNED_INT8: case CL_UNSIGNED_INT16: case CL_UNSIGNED_INT32: color = uc; break;
        }
        size_t origin[3] = {0, 0, 0}, region[3] = {4, 2, 1};
        uint8_t want[16], got[8 * 16];
        int size = expected(f[i], want);
        cl_int e = clEnqueueFillImage(queue, img, color, origin, region, 0, NULL, NULL);
        if (size < 0) {
            CHECK(e == CL_INVALID_OPERATION); /* YUYV, NV12: no colour is one pixel */
        } else {
            CHECK_ERR(e, CL_SUCCESS);
            memset(got, 0xee, sizeof got);
            CHECK_ERR(clEnqueueReadImage(queue, img, CL_TRUE, origin, region, 0, 0, got, 0, NULL, NULL), CL_SUCCESS);
            int ok = 1;
            for (int p = 0; p < 8; p++) ok &= memcmp(got + p * size, want, (size_t)size) == 0;
            if (!ok)
                printf("    format {0x%x, 0x%x}: pixel %02x %02x %02x %02x, expected %02x %02x %02x %02x\n",
                       f[i].image_channel_order, f[i].image_channel_data_type, got[0], got[1], got[2], got[3],
                       want[0], want[1], want[2], want[3]);
            CHECK(ok);
            checked++;
        }
        clReleaseMemObject(img);
    }
    CHECK(checked == 40);
}

static void test_use_host_ptr_is_zero_copy(void) {
    enum { W = 8, H = 4, PITCH = 64 };
    static uint8_t host[PITCH * H];
    memset(host, 0, sizeof host);
    cl_image_format rgba = {CL_RGBA, CL_UNORM_INT8};
    cl_int err = 1;
    cl_mem img = make(CL_MEM_OBJECT_IMAGE2D, W, H, 1, rgba, CL_MEM_USE_HOST_PTR, host, PITCH, &err);
    CHECK(img != NULL && err == CL_SUCCESS);
    if (!img) return;
    size_t rp = 0;
    void *hp = NULL;
    CHECK_ERR(clGetImageInfo(img, CL_IMAGE_ROW_PITCH, sizeof rp, &rp, NULL), CL_SUCCESS);
    CHECK_ERR(clGetMemObjectInfo(img, CL_MEM_HOST_PTR, sizeof hp, &hp, NULL), CL_SUCCESS);
    CHECK(rp == PITCH && hp == host);
    size_t origin[3] = {2, 1, 0}, region[3] = {1, 1, 1}, mrp = 0;
    uint8_t *p = clEnqueueMapImage(queue, img, CL_TRUE, CL_MAP_WRITE, origin, region, &mrp, NULL, 0, NULL, NULL, &err);
    CHECK(p == host + PITCH + 2 * 4 && mrp == PITCH); /* the application's own bytes */
    if (p) CHECK_ERR(clEnqueueUnmapMemObject(queue, img, p, 0, NULL, NULL), CL_SUCCESS);
    float red[4] = {1, 0, 0, 1};
    CHECK_ERR(clEnqueueFillImage(queue, img, red, origin, region, 0, NULL, NULL), CL_SUCCESS);
    CHECK_ERR(clFinish(queue), CL_SUCCESS);
    CHECK(host[PITCH + 8] == 255 && host[PITCH + 9] == 0 && host[PITCH + 11] == 255 && host[PITCH + 12] == 0);
    clReleaseMemObject(img);
    /* COPY_HOST_PTR takes the bytes at the given pitch. */
    img = make(CL_MEM_OBJECT_IMAGE2D, W, H, 1, rgba, CL_MEM_COPY_HOST_PTR, host, PITCH, &err);
    CHECK(img != NULL && err == CL_SUCCESS);
    uint8_t px[4] = {0};
    CHECK_ERR(clEnqueueReadImage(queue, img, CL_TRUE, origin, region, 0, 0, px, 0, NULL, NULL), CL_SUCCESS);
    CHECK(px[0] == 255 && px[3] == 255);
    clReleaseMemObject(img);
}

static void test_nv12_and_copies_with_buffers(void) {
    cl_image_format nv12 = {CL_NV12_INTEL, CL_UNORM_INT8};
    cl_int err = 1;
    cl_mem img = make(CL_MEM_OBJECT_IMAGE2D, 64, 32, 1, nv12, 0, NULL, 0, &err);
    CHECK(img != NULL && err == CL_SUCCESS);
    if (!img) return;
    size_t size = 0, h = 0;
    CHECK_ERR(clGetMemObjectInfo(img, CL_MEM_SIZE, sizeof size, &size, NULL), CL_SUCCESS);
    CHECK_ERR(clGetImageInfo(img, CL_IMAGE_HEIGHT, sizeof h, &h, NULL), CL_SUCCESS);
    CHECK(size == 64 * 48 && h == 32); /* luma rows, then half as many chroma rows */
    static uint8_t frame[64 * 48], back[64 * 48];
    for (size_t i = 0; i < sizeof frame; i++) frame[i] = (uint8_t)(i / 64);
    size_t origin[3] = {0, 0, 0}, region[3] = {64, 48, 1};
    CHECK_ERR(clEnqueueWriteImage(queue, img, CL_TRUE, origin, region, 0, 0, frame, 0, NULL, NULL), CL_SUCCESS);
    cl_mem buf = clCreateBuffer(ctx, 0, sizeof frame, NULL, &err);
    CHECK_ERR(clEnqueueCopyImageToBuffer(queue, img, buf, origin, region, 0, 0, NULL, NULL), CL_SUCCESS);
    CHECK_ERR(clEnqueueReadBuffer(queue, buf, CL_TRUE, 0, sizeof back, back, 0, NULL, NULL), CL_SUCCESS);
    CHECK(memcmp(frame, back, sizeof frame) == 0);
    size_t chroma[3] = {0, 32, 0}, rows[3] = {64, 16, 1};
    CHECK_ERR(clEnqueueCopyBufferToImage(queue, buf, img, 0, chroma, rows, 0, NULL, NULL), CL_SUCCESS);
    CHECK_ERR(clEnqueueReadImage(queue, img, CL_TRUE, chroma, rows, 0, 0, back, 0, NULL, NULL), CL_SUCCESS);
    CHECK(memcmp(frame, back, 64 * 16) == 0);
    size_t past[3] = {0, 33, 0};
    CHECK_ERR(clEnqueueReadImage(queue, img, CL_TRUE, past, rows, 0, 0, back, 0, NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(clEnqueueCopyImageToBuffer(queue, img, buf, origin, region, 1, 0, NULL, NULL), CL_INVALID_VALUE);
    clReleaseMemObject(buf);
    clReleaseMemObject(img);
    cl_mem odd = make(CL_MEM_OBJECT_IMAGE2D, 63, 32, 1, nv12, 0, NULL, 0, &err);
    CHECK(odd == NULL && err == CL_INVALID_IMAGE_DESCRIPTOR);
}

static void test_samplers(void) {
    cl_int err = 1;
    cl_sampler s = clCreateSampler(ctx, CL_TRUE, CL_ADDRESS_REPEAT, CL_FILTER_LINEAR, &err);
    CHECK(s != NULL && err == CL_SUCCESS);
    cl_addressing_mode am = 0;
    cl_uint refs = 0;
    cl_context c = NULL;
    CHECK_ERR(clGetSamplerInfo(s, CL_SAMPLER_ADDRESSING_MODE, sizeof am, &am, NULL), CL_SUCCESS);
    CHECK_ERR(clGetSamplerInfo(s, CL_SAMPLER_CONTEXT, sizeof c, &c, NULL), CL_SUCCESS);
    CHECK(am == CL_ADDRESS_REPEAT && c == ctx);
    CHECK_ERR(clRetainSampler(s), CL_SUCCESS);
    CHECK_ERR(clGetSamplerInfo(s, CL_SAMPLER_REFERENCE_COUNT, sizeof refs, &refs, NULL), CL_SUCCESS);
    CHECK(refs == 2);
    CHECK_ERR(clReleaseSampler(s), CL_SUCCESS);
    CHECK_ERR(clReleaseSampler(s), CL_SUCCESS);
    cl_sampler_properties props[] = {CL_SAMPLER_NORMALIZED_COORDS, CL_FALSE, CL_SAMPLER_FILTER_MODE, CL_FILTER_NEAREST, 0};
    s = clCreateSamplerWithProperties(ctx, props, &err);
    CHECK(s != NULL && err == CL_SUCCESS);
    cl_sampler_properties back[5] = {0};
    size_t ret = 0;
    CHECK_ERR(clGetSamplerInfo(s, CL_SAMPLER_PROPERTIES, sizeof back, back, &ret), CL_SUCCESS);
    CHECK(ret == sizeof props && memcmp(back, props, sizeof props) == 0);
    cl_bool norm = CL_TRUE;
    CHECK_ERR(clGetSamplerInfo(s, CL_SAMPLER_NORMALIZED_COORDS, sizeof norm, &norm, NULL), CL_SUCCESS);
    CHECK(norm == CL_FALSE);
    clReleaseSampler(s);
    CHECK(clCreateSampler(ctx, CL_TRUE, 0x1234, CL_FILTER_LINEAR, &err) == NULL && err == CL_INVALID_VALUE);
    cl_sampler_properties bad[] = {0x9999, 1, 0};
    CHECK(clCreateSamplerWithProperties(ctx, bad, &err) == NULL && err == CL_INVALID_VALUE);
    CHECK_ERR(clRetainSampler((cl_sampler)ctx), CL_INVALID_SAMPLER);
}

static void test_errors(void) {
    cl_int err = 1;
    cl_image_format rgba = {CL_RGBA, CL_UNORM_INT8}, bad = {0x1234, CL_UNORM_INT8}, rgb = {CL_RGB, CL_UNORM_INT8};
    cl_image_desc desc = {.image_type = CL_MEM_OBJECT_IMAGE2D, .image_width = 8, .image_height = 8};
    CHECK(clCreateImage(ctx, 0, NULL, &desc, NULL, &err) == NULL && err == CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
    CHECK(clCreateImage(ctx, 0, &bad, &desc, NULL, &err) == NULL && err == CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
    CHECK(clCreateImage(ctx, 0, &rgb, &desc, NULL, &err) == NULL && err == CL_IMAGE_FORMAT_NOT_SUPPORTED);
    CHECK(clCreateImage(ctx, 0, &rgba, NULL, NULL, &err) == NULL && err == CL_INVALID_IMAGE_DESCRIPTOR);
    cl_image_desc d0 = desc;
    d0.image_height = 0;
    CHECK(clCreateImage(ctx, 0, &rgba, &d0, NULL, &err) == NULL && err == CL_INVALID_IMAGE_DESCRIPTOR);
    d0 = desc, d0.image_row_pitch = 64;
    CHECK(clCreateImage(ctx, 0, &rgba, &d0, NULL, &err) == NULL && err == CL_INVALID_IMAGE_DESCRIPTOR);
    d0 = desc, d0.num_samples = 2;
    CHECK(clCreateImage(ctx, 0, &rgba, &d0, NULL, &err) == NULL && err == CL_INVALID_IMAGE_DESCRIPTOR);
    d0 = desc, d0.image_width = 1 << 20;
    CHECK(clCreateImage(ctx, 0, &rgba, &d0, NULL, &err) == NULL && err == CL_INVALID_IMAGE_SIZE);
    /* A row pitch whose product with the height wraps is refused, never wrapped. */
    static uint8_t small[64];
    d0 = desc, d0.image_row_pitch = SIZE_MAX - 3;
    CHECK(clCreateImage(ctx, CL_MEM_USE_HOST_PTR, &rgba, &d0, small, &err) == NULL && err == CL_INVALID_IMAGE_SIZE);
    CHECK(clCreateImage(ctx, CL_MEM_USE_HOST_PTR, &rgba, &desc, NULL, &err) == NULL && err == CL_INVALID_HOST_PTR);
    CHECK(clCreateImage(ctx, CL_MEM_READ_ONLY | CL_MEM_WRITE_ONLY, &rgba, &desc, NULL, &err) == NULL &&
          err == CL_INVALID_VALUE);
    cl_mem img = clCreateImage(ctx, 0, &rgba, &desc, NULL, &err), buf = clCreateBuffer(ctx, 0, 256, NULL, &err);
    CHECK(img != NULL && buf != NULL);
    uint8_t out[256];
    size_t origin[3] = {0, 0, 0}, region[3] = {8, 8, 1}, beyond[3] = {1, 0, 0}, deep[3] = {8, 8, 2};
    /* A buffer is no image, an image no buffer. */
    CHECK_ERR(clEnqueueReadImage(queue, buf, CL_TRUE, origin, region, 0, 0, out, 0, NULL, NULL), CL_INVALID_MEM_OBJECT);
    CHECK_ERR(clGetImageInfo(buf, CL_IMAGE_WIDTH, sizeof(size_t), out, NULL), CL_INVALID_MEM_OBJECT);
    CHECK_ERR(clEnqueueReadBuffer(queue, img, CL_TRUE, 0, 16, out, 0, NULL, NULL), CL_INVALID_MEM_OBJECT);
    CHECK_ERR(clEnqueueReadImage(queue, img, CL_TRUE, beyond, region, 0, 0, out, 0, NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(clEnqueueReadImage(queue, img, CL_TRUE, origin, deep, 0, 0, out, 0, NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(clEnqueueReadImage(queue, img, CL_TRUE, origin, region, 0, 64, out, 0, NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(clEnqueueReadImage(queue, img, CL_TRUE, NULL, region, 0, 0, out, 0, NULL, NULL), CL_INVALID_VALUE);
    CHECK_ERR(clEnqueueReadImage(queue, img, CL_TRUE, origin, region, 0, 0, NULL, 0, NULL, NULL), CL_INVALID_VALUE);
    cl_image_format other = {CL_RGBA, CL_UNSIGNED_INT8};
    cl_mem img2 = clCreateImage(ctx, 0, &other, &desc, NULL, &err);
    CHECK_ERR(clEnqueueCopyImage(queue, img, img2, origin, origin, region, 0, NULL, NULL), CL_IMAGE_FORMAT_MISMATCH);
    size_t half[3] = {4, 4, 1}, at[3] = {2, 2, 0};
    CHECK_ERR(clEnqueueCopyImage(queue, img, img, origin, at, half, 0, NULL, NULL), CL_MEM_COPY_OVERLAP);
    CHECK(clEnqueueMapImage(queue, img, CL_TRUE, CL_MAP_READ, origin, region, NULL, NULL, 0, NULL, NULL, &err) == NULL &&
          err == CL_INVALID_VALUE);
    cl_mem ro = clCreateImage(ctx, CL_MEM_HOST_READ_ONLY, &rgba, &desc, NULL, &err);
    CHECK_ERR(clEnqueueWriteImage(queue, ro, CL_TRUE, origin, region, 0, 0, out, 0, NULL, NULL), CL_INVALID_OPERATION);
    /* Deprecated forms. */
    cl_mem old = clCreateImage2D(ctx, 0, &rgba, 8, 8, 0, NULL, &err);
    CHECK(old != NULL && err == CL_SUCCESS);
    clReleaseMemObject(old);
    old = clCreateImage3D(ctx, 0, &rgba, 8, 8, 2, 0, 0, NULL, &err);
    CHECK(old != NULL && err == CL_SUCCESS);
    clReleaseMemObject(old);
    CHECK(clCreateImage3D(ctx, 0, &rgba, 8, 8, 0, 0, 0, NULL, &err) == NULL && err == CL_INVALID_IMAGE_DESCRIPTOR);
    /* Properties: echoed; none is taken by the core. */
    cl_mem_properties none[] = {0};
    cl_mem wp = clCreateImageWithProperties(ctx, none, 0, &rgba, &desc, NULL, &err);
    CHECK(wp != NULL && err == CL_SUCCESS);
    size_t ret = 9;
    CHECK_ERR(clGetMemObjectInfo(wp, CL_MEM_PROPERTIES, 0, NULL, &ret), CL_SUCCESS);
    CHECK(ret == sizeof none);
    clReleaseMemObject(wp);
    cl_mem_properties unknown[] = {0x7777, 1, 0};
    CHECK(clCreateImageWithProperties(ctx, unknown, 0, &rgba, &desc, NULL, &err) == NULL && err == CL_INVALID_PROPERTY);
    clReleaseMemObject(ro);
    clReleaseMemObject(img2);
    clReleaseMemObject(img);
    clReleaseMemObject(buf);
}

int main(void) {
    setup();
    static const struct test_case tests[] = {
        {"images::device_and_formats", test_device_and_formats},
        {"images::each_type_round_trips", test_each_type_round_trips},
        {"images::fill_bytes_of_every_format", test_fill_bytes_of_every_format},
        {"images::use_host_ptr_is_zero_copy", test_use_host_ptr_is_zero_copy},
        {"images::nv12_and_copies_with_buffers", test_nv12_and_copies_with_buffers},
        {"images::samplers", test_samplers},
        {"images::errors", test_errors},
    };
    int ready = platform && device && ctx && queue;
    RUN_TESTS(tests, ready);
    close_cpu_device(ctx, queue);
    return finish_tests();
}
