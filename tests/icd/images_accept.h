/* What the image acceptance tests (images_accept_*_test.c) share: the
 * platform under test, the image formats and their element sizes, images of
 * every type made small, a byte pattern and a reference copy of an image's
 * pixels to compare with.
 *
 * The acceptance tests are written from the OpenCL 3.0 API specification
 * (the image chapter, the sampler chapter, the device queries and the
 * embedded profile appendix), not from dmabridge's code: they run against
 * any platform through the loader. DMABRIDGE_IMAGES_PLATFORM names the
 * platform (default "dmabridge"); e.g. with
 * OCL_ICD_VENDORS=/etc/OpenCL/vendors/pocl.icd DMABRIDGE_IMAGES_PLATFORM=
 * "Portable Computing Language" they check PoCL, which is how the suite
 * itself was checked against an independent implementation. Checks that
 * are dmabridge's own promises (issue 22: the video formats), not the
 * specification's, run only on the dmabridge platform. */
#ifndef DMABRIDGE_ICD_IMAGES_ACCEPT_H
#define DMABRIDGE_ICD_IMAGES_ACCEPT_H

#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static cl_platform_id platform;
static cl_device_id device;
static cl_context ctx;
static cl_command_queue queue;
/* 1 when the platform under test is dmabridge, or PoCL. */
static int on_dmabridge, on_pocl;
/* 1 when the device reports EMBEDDED_PROFILE (its minimum lists differ). */
static int embedded;

/* The platform named by DMABRIDGE_IMAGES_PLATFORM (default "dmabridge"),
 * its first CPU device, a context and an in-order queue on it. */
static inline void images_setup(void) {
    const char *want = getenv("DMABRIDGE_IMAGES_PLATFORM");
    if (!want || !*want) want = "dmabridge";
    on_dmabridge = strcmp(want, "dmabridge") == 0;
    on_pocl = strcmp(want, "Portable Computing Language") == 0;
    cl_uint n = 0;
    cl_platform_id ps[16];
    if (clGetPlatformIDs(16, ps, &n) != CL_SUCCESS) return;
    for (cl_uint i = 0; i < n && i < 16; i++) {
        char name[128] = {0};
        clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        if (strcmp(name, want) == 0) platform = ps[i];
    }
    if (!platform || clGetDeviceIDs(platform, CL_DEVICE_TYPE_CPU, 1, &device, NULL) != CL_SUCCESS) {
        device = NULL;
        return;
    }
    char profile[64] = {0};
    clGetDeviceInfo(device, CL_DEVICE_PROFILE, sizeof profile, profile, NULL);
    embedded = strcmp(profile, "EMBEDDED_PROFILE") == 0;
    cl_int err;
    ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    if (ctx) queue = clCreateCommandQueueWithProperties(ctx, device, NULL, &err);
}

static inline void images_teardown(void) {
    if (queue) clReleaseCommandQueue(queue);
    if (ctx) clReleaseContext(ctx);
}

/* The formats every device with image support must support for reading or
 * writing in a kernel, OpenCL 3.0 "Minimum list of required image formats"
 * (full profile: these ten RGBA types and BGRA UNORM_INT8; embedded
 * profile, appendix "OpenCL Embedded Profile": the ten RGBA types). */
static const cl_image_format required_formats[] = {
    {CL_RGBA, CL_UNORM_INT8},     {CL_RGBA, CL_UNORM_INT16},    {CL_RGBA, CL_SIGNED_INT8},
    {CL_RGBA, CL_SIGNED_INT16},   {CL_RGBA, CL_SIGNED_INT32},   {CL_RGBA, CL_UNSIGNED_INT8},
    {CL_RGBA, CL_UNSIGNED_INT16}, {CL_RGBA, CL_UNSIGNED_INT32}, {CL_RGBA, CL_HALF_FLOAT},
    {CL_RGBA, CL_FLOAT},          {CL_BGRA, CL_UNORM_INT8},
};
#define N_REQUIRED (sizeof required_formats / sizeof required_formats[0])
/* BGRA is the last entry: not required of an embedded profile device. */
static inline size_t n_required(void) { return embedded ? N_REQUIRED - 1 : N_REQUIRED; }

static const cl_mem_object_type image_types[] = {
    CL_MEM_OBJECT_IMAGE1D,       CL_MEM_OBJECT_IMAGE1D_BUFFER, CL_MEM_OBJECT_IMAGE1D_ARRAY,
    CL_MEM_OBJECT_IMAGE2D,       CL_MEM_OBJECT_IMAGE2D_ARRAY,  CL_MEM_OBJECT_IMAGE3D,
};
#define N_TYPES (sizeof image_types / sizeof image_types[0])

static inline const char *type_name(cl_mem_object_type t) {
    switch (t) {
    case CL_MEM_OBJECT_IMAGE1D: return "1D";
    case CL_MEM_OBJECT_IMAGE1D_BUFFER: return "1D buffer";
    case CL_MEM_OBJECT_IMAGE1D_ARRAY: return "1D array";
    case CL_MEM_OBJECT_IMAGE2D: return "2D";
    case CL_MEM_OBJECT_IMAGE2D_ARRAY: return "2D array";
    case CL_MEM_OBJECT_IMAGE3D: return "3D";
    default: return "?";
    }
}

/* Channels of an order (0: not an order of the specification). */
static inline size_t order_channels(cl_channel_order o) {
    switch (o) {
    case CL_R: case CL_A: case CL_INTENSITY: case CL_LUMINANCE: case CL_DEPTH: return 1;
    case CL_RG: case CL_RA: case CL_Rx: return 2;
    case CL_RGB: case CL_RGx: case CL_sRGB: return 3;
    case CL_RGBA: case CL_BGRA: case CL_ARGB: case CL_ABGR: case CL_RGBx: case CL_sRGBA:
    case CL_sBGRA: case CL_sRGBx: return 4;
    default: return 0;
    }
}

/* Bytes of one channel; the packed types give the bytes of the whole
 * element (and 0 for a type the specification does not define). */
static inline size_t type_bytes(cl_channel_type t) {
    switch (t) {
    case CL_SNORM_INT8: case CL_UNORM_INT8: case CL_SIGNED_INT8: case CL_UNSIGNED_INT8: return 1;
    case CL_SNORM_INT16: case CL_UNORM_INT16: case CL_SIGNED_INT16: case CL_UNSIGNED_INT16:
    case CL_HALF_FLOAT: case CL_UNORM_SHORT_565: case CL_UNORM_SHORT_555: return 2;
    case CL_SIGNED_INT32: case CL_UNSIGNED_INT32: case CL_FLOAT: case CL_UNORM_INT_101010:
    case CL_UNORM_INT_101010_2: return 4;
    default: return 0;
    }
}

static inline int packed_type(cl_channel_type t) {
    return t == CL_UNORM_SHORT_565 || t == CL_UNORM_SHORT_555 || t == CL_UNORM_INT_101010 ||
           t == CL_UNORM_INT_101010_2;
}

/* Bytes of one element of format f (CL_IMAGE_ELEMENT_SIZE). */
static inline size_t elem_size(cl_image_format f) {
    if (packed_type(f.image_channel_data_type)) return type_bytes(f.image_channel_data_type);
    return order_channels(f.image_channel_order) * type_bytes(f.image_channel_data_type);
}

/* The small sizes every test uses; odd widths catch pitch mistakes. */
enum { W = 7, H = 5, D = 3, A = 4 };

/* The full region of an image of type t with the sizes above: (width,
 * height or array size, depth or array size). */
static inline void full_region(cl_mem_object_type t, size_t r[3]) {
    r[0] = W, r[1] = 1, r[2] = 1;
    if (t == CL_MEM_OBJECT_IMAGE1D_ARRAY) r[1] = A;
    if (t == CL_MEM_OBJECT_IMAGE2D || t == CL_MEM_OBJECT_IMAGE2D_ARRAY || t == CL_MEM_OBJECT_IMAGE3D) r[1] = H;
    if (t == CL_MEM_OBJECT_IMAGE2D_ARRAY) r[2] = A;
    if (t == CL_MEM_OBJECT_IMAGE3D) r[2] = D;
}

/* The descriptor of an image of type t with the sizes above (the 1D image
 * buffer's buffer is the caller's). */
static inline cl_image_desc make_desc(cl_mem_object_type t, cl_mem buffer) {
    cl_image_desc d;
    memset(&d, 0, sizeof d);
    d.image_type = t;
    d.image_width = W;
    if (t == CL_MEM_OBJECT_IMAGE2D || t == CL_MEM_OBJECT_IMAGE2D_ARRAY || t == CL_MEM_OBJECT_IMAGE3D) d.image_height = H;
    if (t == CL_MEM_OBJECT_IMAGE3D) d.image_depth = D;
    if (t == CL_MEM_OBJECT_IMAGE1D_ARRAY || t == CL_MEM_OBJECT_IMAGE2D_ARRAY) d.image_array_size = A;
    d.mem_object = buffer;
    return d;
}

/* An image of type t and format f with the sizes above, on ctx; for a 1D
 * image buffer, *buf receives the buffer made for it (release both). */
static inline cl_mem make_image(cl_mem_object_type t, cl_image_format f, cl_mem_flags flags, cl_mem *buf,
                                cl_int *err) {
    cl_mem b = NULL;
    if (t == CL_MEM_OBJECT_IMAGE1D_BUFFER) {
        b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, W * elem_size(f), NULL, err);
        if (!b) return NULL;
    }
    if (buf) *buf = b;
    cl_image_desc d = make_desc(t, b);
    cl_mem m = clCreateImage(ctx, flags, &f, &d, NULL, err);
    if (!m && b) {
        clReleaseMemObject(b);
        if (buf) *buf = NULL;
    }
    return m;
}

static inline void release2(cl_mem a, cl_mem b) {
    if (a) clReleaseMemObject(a);
    if (b) clReleaseMemObject(b);
}

/* A byte pattern that differs between neighbouring bytes and seeds. */
static inline void pattern(unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(i * 37u + seed * 11u + 1u);
}

/* Offset in a host buffer of element (x, y, z) of a region laid out with
 * row pitch rp and slice pitch sp: for a 1D image array y is the image index
 * and each image is a slice ("slice_pitch ... each image of a 1D or 2D image
 * array"). */
static inline size_t host_off(cl_mem_object_type t, size_t es, size_t rp, size_t sp, size_t x, size_t y, size_t z) {
    if (t == CL_MEM_OBJECT_IMAGE1D_ARRAY) return y * sp + x * es;
    return z * sp + y * rp + x * es;
}

/* Offset of element (x, y, z) of a whole image in its tight reference copy. */
static inline size_t ref_off(const size_t full[3], size_t es, size_t x, size_t y, size_t z) {
    return ((z * full[1] + y) * full[0] + x) * es;
}

/* Reads the whole of image m (type t, element size es) tightly into out. */
static inline cl_int read_all(cl_mem m, cl_mem_object_type t, void *out) {
    size_t o[3] = {0, 0, 0}, r[3];
    full_region(t, r);
    return clEnqueueReadImage(queue, m, CL_TRUE, o, r, 0, 0, out, 0, NULL, NULL);
}

static inline cl_int write_all(cl_mem m, cl_mem_object_type t, const void *in) {
    size_t o[3] = {0, 0, 0}, r[3];
    full_region(t, r);
    return clEnqueueWriteImage(queue, m, CL_TRUE, o, r, 0, 0, in, 0, NULL, NULL);
}

/* The number of bytes of a whole image of type t in tight layout. */
static inline size_t full_bytes(cl_mem_object_type t, size_t es) {
    size_t r[3];
    full_region(t, r);
    return r[0] * r[1] * r[2] * es;
}

/* 1 if format f is in the list. */
static inline int has_format(const cl_image_format *list, cl_uint n, cl_image_format f) {
    for (cl_uint i = 0; i < n; i++)
        if (list[i].image_channel_order == f.image_channel_order &&
            list[i].image_channel_data_type == f.image_channel_data_type)
            return 1;
    return 0;
}

/* The formats the context supports for image type t and flags (malloc'd,
 * *n entries; NULL when the query fails). */
static inline cl_image_format *supported(cl_context c, cl_mem_flags flags, cl_mem_object_type t, cl_uint *n) {
    *n = 0;
    if (clGetSupportedImageFormats(c, flags, t, 0, NULL, n) != CL_SUCCESS) return NULL;
    cl_image_format *list = calloc(*n + 1, sizeof *list);
    if (list && clGetSupportedImageFormats(c, flags, t, *n, list, NULL) != CL_SUCCESS) {
        free(list);
        return NULL;
    }
    return list;
}

#endif
