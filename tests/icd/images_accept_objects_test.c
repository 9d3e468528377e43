/* Acceptance tests of OpenCL image and sampler objects, written from the
 * OpenCL 3.0 API specification (images_accept.h says how and against which
 * platform): the CL_DEVICE_IMAGE_* queries and their minimums,
 * clGetSupportedImageFormats and the minimum format list, clCreateImage /
 * clCreateImageWithProperties and every error the specification lists for
 * them, clGetImageInfo and clGetMemObjectInfo on images, samplers
 * (clCreateSampler*, clGetSamplerInfo, retain/release) and their error
 * rules, images refused by the buffer commands, and a context whose only
 * device has no image support (the edu accelerator in the QEMU guest).
 * The commands on images are in images_accept_commands_test.c.
 *
 * Where the specification's wording changed between 3.0 releases, the
 * v3.0.18 text is followed (v3.0.19's clCreateImage list dropped the
 * generic CL_INVALID_IMAGE_DESCRIPTOR rule, which earlier 3.0 texts have
 * and the CTS relies on). Closing line: "N passed, N failed". */
#define CL_TARGET_OPENCL_VERSION 300
#include "images_accept.h"

#include <stdio.h>

static size_t dev_size(cl_device_info p) {
    size_t v = 0;
    CHECK_ERR(clGetDeviceInfo(device, p, sizeof v, &v, NULL), CL_SUCCESS);
    return v;
}
static cl_uint dev_uint(cl_device_info p) {
    cl_uint v = 0;
    CHECK_ERR(clGetDeviceInfo(device, p, sizeof v, &v, NULL), CL_SUCCESS);
    return v;
}

/* Device queries: image support and the minimums of the device queries
 * table (full profile) or of the embedded profile's table. */
static void test_device_image_queries(void) {
    cl_bool support = CL_FALSE;
    size_t ret = 0;
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_IMAGE_SUPPORT, sizeof support, &support, &ret), CL_SUCCESS);
    CHECK(support == CL_TRUE && ret == sizeof(cl_bool));
    size_t min2d = embedded ? 2048 : 16384;
    CHECK(dev_size(CL_DEVICE_IMAGE2D_MAX_WIDTH) >= min2d);
    CHECK(dev_size(CL_DEVICE_IMAGE2D_MAX_HEIGHT) >= min2d);
    CHECK(dev_size(CL_DEVICE_IMAGE3D_MAX_WIDTH) >= 2048);
    CHECK(dev_size(CL_DEVICE_IMAGE3D_MAX_HEIGHT) >= 2048);
    CHECK(dev_size(CL_DEVICE_IMAGE3D_MAX_DEPTH) >= 2048);
    CHECK(dev_size(CL_DEVICE_IMAGE_MAX_BUFFER_SIZE) >= (embedded ? 2048u : 65536u));
    CHECK(dev_size(CL_DEVICE_IMAGE_MAX_ARRAY_SIZE) >= (embedded ? 256u : 2048u));
    CHECK(dev_uint(CL_DEVICE_MAX_SAMPLERS) >= (embedded ? 8u : 16u));
    CHECK(dev_uint(CL_DEVICE_MAX_READ_IMAGE_ARGS) >= (embedded ? 8u : 128u));
    CHECK(dev_uint(CL_DEVICE_MAX_WRITE_IMAGE_ARGS) >= (embedded ? 8u : 64u));
    /* "The value returned must be a power of 2" (or 0 without 2D images
     * from buffers). */
    cl_uint pitch = dev_uint(CL_DEVICE_IMAGE_PITCH_ALIGNMENT);
    CHECK((pitch & (pitch - 1)) == 0);
    cl_uint base = dev_uint(CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT);
    CHECK((base & (base - 1)) == 0);
    /* param_value_size smaller than the return type. */
    char small = 'x';
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_IMAGE2D_MAX_WIDTH, 1, &small, NULL), CL_INVALID_VALUE);
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_IMAGE_SUPPORT, 1, &small, NULL), CL_INVALID_VALUE);
}

/* clGetSupportedImageFormats: its errors, the count protocol, and the
 * minimum list for every image type and access flag. */
static void test_supported_formats(void) {
    cl_uint n = 0;
    cl_image_format one[1];
    CHECK_ERR(clGetSupportedImageFormats(NULL, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, 0, NULL, &n),
              CL_INVALID_CONTEXT);
    CHECK_ERR(clGetSupportedImageFormats((cl_context)queue, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, 0, NULL, &n),
              CL_INVALID_CONTEXT);
    /* "if flags is not valid" (READ_ONLY with WRITE_ONLY, an unknown bit). */
    CHECK_ERR(clGetSupportedImageFormats(ctx, CL_MEM_READ_ONLY | CL_MEM_WRITE_ONLY, CL_MEM_OBJECT_IMAGE2D, 0, NULL, &n),
              CL_INVALID_VALUE);
    CHECK_ERR(clGetSupportedImageFormats(ctx, (cl_mem_flags)1 << 40, CL_MEM_OBJECT_IMAGE2D, 0, NULL, &n),
              CL_INVALID_VALUE);
    /* "if image_type is not valid". */
    CHECK_ERR(clGetSupportedImageFormats(ctx, CL_MEM_READ_WRITE, CL_MEM_OBJECT_BUFFER, 0, NULL, &n), CL_INVALID_VALUE);
    CHECK_ERR(clGetSupportedImageFormats(ctx, CL_MEM_READ_WRITE, 0x7777, 0, NULL, &n), CL_INVALID_VALUE);
    /* "if num_entries is zero and image_formats is not NULL". */
    CHECK_ERR(clGetSupportedImageFormats(ctx, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, 0, one, &n), CL_INVALID_VALUE);
    /* Both pointers NULL is allowed. */
    CHECK_ERR(clGetSupportedImageFormats(ctx, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, 0, NULL, NULL), CL_SUCCESS);

    const cl_mem_flags flag_sets[] = {CL_MEM_READ_WRITE, CL_MEM_READ_ONLY, CL_MEM_WRITE_ONLY};
    for (size_t t = 0; t < N_TYPES; t++) {
        for (size_t k = 0; k < 3; k++) {
            cl_uint count = 0;
            cl_image_format *list = supported(ctx, flag_sets[k], image_types[t], &count);
            CHECK(list != NULL && count > 0);
            if (!list) continue;
            for (size_t i = 0; i < n_required(); i++) {
                if (!has_format(list, count, required_formats[i])) {
                    printf("    %s image, flags 0x%lx: required format (0x%x, 0x%x) not listed\n",
                           type_name(image_types[t]), (unsigned long)flag_sets[k],
                           required_formats[i].image_channel_order, required_formats[i].image_channel_data_type);
                    failed_checks++;
                }
            }
            /* Only num_entries entries are written. */
            if (count >= 2) {
                cl_image_format two[3];
                memset(two, 0x5a, sizeof two);
                CHECK_ERR(clGetSupportedImageFormats(ctx, flag_sets[k], image_types[t], 2, two, NULL), CL_SUCCESS);
                unsigned char guard[sizeof two[2]];
                memset(guard, 0x5a, sizeof guard);
                CHECK(memcmp(&two[2], guard, sizeof guard) == 0);
                CHECK(memcmp(two, list, 2 * sizeof *two) == 0);
            }
            free(list);
        }
    }
    /* CL_MEM_KERNEL_READ_AND_WRITE is a valid flag for the query. */
    CHECK_ERR(clGetSupportedImageFormats(ctx, CL_MEM_KERNEL_READ_AND_WRITE, CL_MEM_OBJECT_IMAGE2D, 0, NULL, &n),
              CL_SUCCESS);

    /* Every format listed for a type can be used to create an image of it. */
    for (size_t t = 0; t < N_TYPES; t++) {
        cl_uint count = 0;
        cl_image_format *list = supported(ctx, CL_MEM_READ_WRITE, image_types[t], &count);
        for (cl_uint i = 0; list && i < count; i++) {
            /* Planar video formats have rules of their own (extensions). */
            if (elem_size(list[i]) == 0) continue;
            cl_int err = 1;
            cl_mem buf = NULL;
            cl_mem m = make_image(image_types[t], list[i], CL_MEM_READ_WRITE, &buf, &err);
            if (!m || err != CL_SUCCESS) {
                printf("    %s image of listed format (0x%x, 0x%x): error %d\n", type_name(image_types[t]),
                       list[i].image_channel_order, list[i].image_channel_data_type, err);
                failed_checks++;
            }
            release2(m, buf);
        }
        free(list);
    }

    /* dmabridge's own promise (issue 22): the video formats for 2D images. */
    if (on_dmabridge) {
        cl_uint count = 0;
        cl_image_format *list = supported(ctx, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, &count);
        const cl_image_format video[] = {{CL_RGBA, CL_UNORM_INT8},      {CL_BGRA, CL_UNORM_INT8},
                                         {CL_R, CL_UNORM_INT8},         {CL_R, CL_UNORM_INT16},
                                         {CL_RG, CL_UNORM_INT8},        {CL_RG, CL_UNORM_INT16},
                                         {CL_YUYV_INTEL, CL_UNORM_INT8}, {CL_NV12_INTEL, CL_UNORM_INT8}};
        for (size_t i = 0; list && i < sizeof video / sizeof video[0]; i++) {
            if (!has_format(list, count, video[i])) {
                printf("    dmabridge: video format (0x%x, 0x%x) not listed for 2D images\n",
                       video[i].image_channel_order, video[i].image_channel_data_type);
                failed_checks++;
            }
        }
        free(list);
    }
}

static cl_mem create(cl_mem_flags flags, const cl_image_format *f, const cl_image_desc *d, void *host, cl_int *err) {
    *err = 1;
    return clCreateImage(ctx, flags, f, d, host, err);
}
#define CREATE_FAILS(flags, f, d, host, code)                                                          \
    do {                                                                                               \
        cl_int e_;                                                                                     \
        cl_mem m_ = create((flags), (f), (d), (host), &e_);                                            \
        if (m_ != NULL || e_ != (code)) {                                                              \
            printf("    check failed at %s:%d: clCreateImage = %p, error %d, expected NULL and %d\n", \
                   __FILE__, __LINE__, (void *)m_, e_, (code));                                        \
            failed_checks++;                                                                           \
        }                                                                                              \
        if (m_) clReleaseMemObject(m_);                                                                \
    } while (0)

/* A valid format that the context does not support for 2D images, if any:
 * orders and types the specification defines for any combination. */
static int unsupported_format(cl_image_format *out) {
    cl_uint count = 0;
    cl_image_format *list = supported(ctx, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, &count);
    const cl_channel_order orders[] = {CL_RA, CL_A, CL_RG, CL_R};
    const cl_channel_type types[] = {CL_SIGNED_INT32, CL_UNSIGNED_INT32, CL_FLOAT, CL_SIGNED_INT8, CL_SNORM_INT16,
                                     CL_HALF_FLOAT};
    int found = 0;
    for (size_t o = 0; list && !found && o < 4; o++)
        for (size_t t = 0; !found && t < 6; t++) {
            cl_image_format f = {orders[o], types[t]};
            if (!has_format(list, count, f)) *out = f, found = 1;
        }
    free(list);
    return found;
}

/* clCreateImage's errors, one rule at a time, exact codes. */
static void test_create_errors(void) {
    cl_image_format f = {CL_RGBA, CL_UNORM_INT8};
    cl_image_desc d2 = make_desc(CL_MEM_OBJECT_IMAGE2D, NULL);
    cl_image_desc d3 = make_desc(CL_MEM_OBJECT_IMAGE3D, NULL);
    static unsigned char host[4 * 64 * 64 * 8];
    cl_int err = 1;

    /* The valid call first: an error below is the rule's, not the set-up's. */
    cl_mem ok = create(0, &f, &d2, NULL, &err);
    CHECK(ok != NULL && err == CL_SUCCESS);
    /* flags 0 is CL_MEM_READ_WRITE. A NULL errcode_ret is allowed. */
    cl_mem_flags got = 0;
    CHECK_ERR(clGetMemObjectInfo(ok, CL_MEM_FLAGS, sizeof got, &got, NULL), CL_SUCCESS);
    CHECK(got == 0 || got == CL_MEM_READ_WRITE);
    release2(ok, NULL);
    ok = clCreateImage(ctx, 0, &f, &d2, NULL, NULL);
    CHECK(ok != NULL);
    release2(ok, NULL);

    /* CL_INVALID_CONTEXT. */
    CHECK(clCreateImage(NULL, 0, &f, &d2, NULL, &err) == NULL && err == CL_INVALID_CONTEXT);
    CHECK(clCreateImage((cl_context)queue, 0, &f, &d2, NULL, &err) == NULL && err == CL_INVALID_CONTEXT);
    /* CL_INVALID_VALUE: flags not valid. */
    CREATE_FAILS(CL_MEM_READ_ONLY | CL_MEM_WRITE_ONLY, &f, &d2, NULL, CL_INVALID_VALUE);
    CREATE_FAILS(CL_MEM_READ_WRITE | CL_MEM_READ_ONLY, &f, &d2, NULL, CL_INVALID_VALUE);
    CREATE_FAILS(CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_WRITE_ONLY, &f, &d2, NULL, CL_INVALID_VALUE);
    CREATE_FAILS(CL_MEM_HOST_NO_ACCESS | CL_MEM_HOST_READ_ONLY, &f, &d2, NULL, CL_INVALID_VALUE);
    CREATE_FAILS(CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR, &f, &d2, host, CL_INVALID_VALUE);
    CREATE_FAILS(CL_MEM_USE_HOST_PTR | CL_MEM_ALLOC_HOST_PTR, &f, &d2, host, CL_INVALID_VALUE);
    CREATE_FAILS((cl_mem_flags)1 << 40, &f, &d2, NULL, CL_INVALID_VALUE);

    /* CL_INVALID_IMAGE_FORMAT_DESCRIPTOR: NULL, unknown order or type, and
     * combinations the format tables exclude. */
    CREATE_FAILS(0, NULL, &d2, NULL, CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
    cl_image_format bad = {0x7777, CL_UNORM_INT8};
    CREATE_FAILS(0, &bad, &d2, NULL, CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
    bad = (cl_image_format){CL_RGBA, 0x7777};
    CREATE_FAILS(0, &bad, &d2, NULL, CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
    /* "CL_UNORM_SHORT_565 ... The channel order must be CL_RGB or CL_RGBx." */
    bad = (cl_image_format){CL_RGBA, CL_UNORM_SHORT_565};
    CREATE_FAILS(0, &bad, &d2, NULL, CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
    /* "CL_UNORM_INT_101010_2 ... The channel order must be CL_RGBA." */
    bad = (cl_image_format){CL_R, CL_UNORM_INT_101010_2};
    CREATE_FAILS(0, &bad, &d2, NULL, CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
    /* "The number of bits per element ... must be a power of two": RGB of
     * 8-bit channels is 24 bits. */
    bad = (cl_image_format){CL_RGB, CL_UNORM_INT8};
    CREATE_FAILS(0, &bad, &d2, NULL, CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);

    /* CL_INVALID_IMAGE_DESCRIPTOR: NULL, an image_type that is not an image
     * type, pitches without a host pointer, num_mip_levels or num_samples
     * not 0, a mem_object where none may be. */
    CREATE_FAILS(0, &f, NULL, NULL, CL_INVALID_IMAGE_DESCRIPTOR);
    cl_image_desc d = d2;
    d.image_type = CL_MEM_OBJECT_BUFFER;
    CREATE_FAILS(0, &f, &d, NULL, CL_INVALID_IMAGE_DESCRIPTOR);
    d.image_type = 0x7777;
    CREATE_FAILS(0, &f, &d, NULL, CL_INVALID_IMAGE_DESCRIPTOR);
    d = d2;
    d.image_row_pitch = W * 4; /* "must be zero if host_ptr is NULL" */
    CREATE_FAILS(0, &f, &d, NULL, CL_INVALID_IMAGE_DESCRIPTOR);
    d = d3;
    d.image_slice_pitch = W * 4 * H;
    CREATE_FAILS(0, &f, &d, NULL, CL_INVALID_IMAGE_DESCRIPTOR);
    /* PoCL 3.1 aborts the process on these (clCreateImage.c: "is
     * unimplemented"): left out when the suite is checked against it. */
    if (!on_pocl) {
        d = d2;
        d.num_mip_levels = 2;
        CREATE_FAILS(0, &f, &d, NULL, CL_INVALID_IMAGE_DESCRIPTOR);
        d = d2;
        d.num_samples = 2;
        CREATE_FAILS(0, &f, &d, NULL, CL_INVALID_IMAGE_DESCRIPTOR);
    }
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 65536, NULL, &err);
    d = d3; /* a 3D image may not be made from a buffer */
    d.mem_object = b;
    CREATE_FAILS(0, &f, &d, NULL, CL_INVALID_IMAGE_DESCRIPTOR);
    d = make_desc(CL_MEM_OBJECT_IMAGE1D_BUFFER, NULL); /* a 1D image buffer needs one */
    CREATE_FAILS(0, &f, &d, NULL, CL_INVALID_IMAGE_DESCRIPTOR);
    /* Pitches with a host pointer: below width x element size, not a
     * multiple of the element size, slice pitch below row pitch x height or
     * not a multiple of the row pitch. */
    d = d2;
    d.image_row_pitch = W * 4 - 4;
    CREATE_FAILS(CL_MEM_COPY_HOST_PTR, &f, &d, host, CL_INVALID_IMAGE_DESCRIPTOR);
    d.image_row_pitch = W * 4 + 2;
    CREATE_FAILS(CL_MEM_COPY_HOST_PTR, &f, &d, host, CL_INVALID_IMAGE_DESCRIPTOR);
    d = d3;
    d.image_row_pitch = W * 4 + 4;
    d.image_slice_pitch = (W * 4 + 4) * (H - 1);
    CREATE_FAILS(CL_MEM_USE_HOST_PTR, &f, &d, host, CL_INVALID_IMAGE_DESCRIPTOR);
    d.image_slice_pitch = (W * 4 + 4) * H + 4;
    CREATE_FAILS(CL_MEM_USE_HOST_PTR, &f, &d, host, CL_INVALID_IMAGE_DESCRIPTOR);
    d = make_desc(CL_MEM_OBJECT_IMAGE1D_ARRAY, NULL); /* slice pitch >= row pitch */
    d.image_row_pitch = W * 4;
    d.image_slice_pitch = W * 4 - 4;
    CREATE_FAILS(CL_MEM_COPY_HOST_PTR, &f, &d, host, CL_INVALID_IMAGE_DESCRIPTOR);

    /* CL_INVALID_IMAGE_SIZE: a dimension 0, or above the device's maximum. */
    const cl_mem_object_type sized[] = {CL_MEM_OBJECT_IMAGE1D, CL_MEM_OBJECT_IMAGE1D_ARRAY, CL_MEM_OBJECT_IMAGE2D,
                                        CL_MEM_OBJECT_IMAGE2D_ARRAY, CL_MEM_OBJECT_IMAGE3D};
    for (size_t i = 0; i < 5; i++) {
        d = make_desc(sized[i], NULL);
        d.image_width = 0;
        CREATE_FAILS(0, &f, &d, NULL, CL_INVALID_IMAGE_SIZE);
    }
    d = d2;
    d.image_height = 0;
    CREATE_FAILS(0, &f, &d, NULL, CL_INVALID_IMAGE_SIZE);
    d = d3;
    d.image_depth = 0;
    CREATE_FAILS(0, &f, &d, NULL, CL_INVALID_IMAGE_SIZE);
    d = make_desc(CL_MEM_OBJECT_IMAGE2D_ARRAY, NULL);
    d.image_array_size = 0;
    CREATE_FAILS(0, &f, &d, NULL, CL_INVALID_IMAGE_SIZE);
    d = make_desc(CL_MEM_OBJECT_IMAGE1D_ARRAY, NULL);
    d.image_array_size = dev_size(CL_DEVICE_IMAGE_MAX_ARRAY_SIZE) + 1;
    CREATE_FAILS(0, &f, &d, NULL, CL_INVALID_IMAGE_SIZE);
    d = d2;
    d.image_width = dev_size(CL_DEVICE_IMAGE2D_MAX_WIDTH) + 1;
    CREATE_FAILS(0, &f, &d, NULL, CL_INVALID_IMAGE_SIZE);
    d = d2;
    d.image_height = dev_size(CL_DEVICE_IMAGE2D_MAX_HEIGHT) + 1;
    CREATE_FAILS(0, &f, &d, NULL, CL_INVALID_IMAGE_SIZE);
    d = make_desc(CL_MEM_OBJECT_IMAGE1D, NULL);
    d.image_width = dev_size(CL_DEVICE_IMAGE2D_MAX_WIDTH) + 1;
    CREATE_FAILS(0, &f, &d, NULL, CL_INVALID_IMAGE_SIZE);
    d = d3;
    d.image_depth = dev_size(CL_DEVICE_IMAGE3D_MAX_DEPTH) + 1;
    CREATE_FAILS(0, &f, &d, NULL, CL_INVALID_IMAGE_SIZE);
    d = d3;
    d.image_width = dev_size(CL_DEVICE_IMAGE3D_MAX_WIDTH) + 1;
    CREATE_FAILS(0, &f, &d, NULL, CL_INVALID_IMAGE_SIZE);
    d = make_desc(CL_MEM_OBJECT_IMAGE1D_BUFFER, b);
    d.image_width = dev_size(CL_DEVICE_IMAGE_MAX_BUFFER_SIZE) + 1;
    CREATE_FAILS(0, &f, &d, NULL, CL_INVALID_IMAGE_SIZE);

    /* CL_INVALID_HOST_PTR. */
    CREATE_FAILS(CL_MEM_USE_HOST_PTR, &f, &d2, NULL, CL_INVALID_HOST_PTR);
    CREATE_FAILS(CL_MEM_COPY_HOST_PTR, &f, &d2, NULL, CL_INVALID_HOST_PTR);
    CREATE_FAILS(0, &f, &d2, host, CL_INVALID_HOST_PTR);
    CREATE_FAILS(CL_MEM_ALLOC_HOST_PTR, &f, &d2, host, CL_INVALID_HOST_PTR);

    /* CL_IMAGE_FORMAT_NOT_SUPPORTED: a valid format no device supports. */
    cl_image_format unsup;
    if (unsupported_format(&unsup)) CREATE_FAILS(0, &unsup, &d2, NULL, CL_IMAGE_FORMAT_NOT_SUPPORTED);

    /* Images from a buffer (1D image buffer): flags the buffer forbids. */
    cl_mem ro = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_HOST_READ_ONLY, W * 4, NULL, &err);
    cl_mem wo = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY | CL_MEM_HOST_WRITE_ONLY, W * 4, NULL, &err);
    cl_mem na = clCreateBuffer(ctx, CL_MEM_HOST_NO_ACCESS, W * 4, NULL, &err);
    d = make_desc(CL_MEM_OBJECT_IMAGE1D_BUFFER, ro);
    CREATE_FAILS(CL_MEM_READ_WRITE, &f, &d, NULL, CL_INVALID_VALUE);
    CREATE_FAILS(CL_MEM_WRITE_ONLY, &f, &d, NULL, CL_INVALID_VALUE);
    CREATE_FAILS(CL_MEM_HOST_WRITE_ONLY, &f, &d, NULL, CL_INVALID_VALUE);
    CREATE_FAILS(CL_MEM_USE_HOST_PTR, &f, &d, host, CL_INVALID_VALUE);
    CREATE_FAILS(CL_MEM_ALLOC_HOST_PTR, &f, &d, NULL, CL_INVALID_VALUE);
    CREATE_FAILS(CL_MEM_COPY_HOST_PTR, &f, &d, host, CL_INVALID_VALUE);
    d.mem_object = wo;
    CREATE_FAILS(CL_MEM_READ_ONLY, &f, &d, NULL, CL_INVALID_VALUE);
    CREATE_FAILS(CL_MEM_HOST_READ_ONLY, &f, &d, NULL, CL_INVALID_VALUE);
    d.mem_object = na;
    CREATE_FAILS(CL_MEM_HOST_READ_ONLY, &f, &d, NULL, CL_INVALID_VALUE);
    CREATE_FAILS(CL_MEM_HOST_WRITE_ONLY, &f, &d, NULL, CL_INVALID_VALUE);
    /* ... and what it inherits when flags leave them out. */
    d.mem_object = ro;
    cl_mem inh = create(0, &f, &d, NULL, &err);
    CHECK(inh != NULL && err == CL_SUCCESS);
    got = 0;
    if (inh) CHECK_ERR(clGetMemObjectInfo(inh, CL_MEM_FLAGS, sizeof got, &got, NULL), CL_SUCCESS);
    CHECK((got & CL_MEM_READ_ONLY) && (got & CL_MEM_HOST_READ_ONLY));
    release2(inh, NULL);
    /* The buffer too small for width x element size. */
    d = make_desc(CL_MEM_OBJECT_IMAGE1D_BUFFER, ro);
    d.image_width = W + 1;
    cl_mem big = create(0, &f, &d, NULL, &err);
    CHECK(big == NULL && err != CL_SUCCESS);
    release2(big, NULL);
    release2(ro, wo);
    release2(na, b);

    /* clCreateImageWithProperties: NULL and empty lists; an unknown
     * property is CL_INVALID_PROPERTY; CL_MEM_PROPERTIES answers. */
    cl_mem p = clCreateImageWithProperties(ctx, NULL, 0, &f, &d2, NULL, &err);
    CHECK(p != NULL && err == CL_SUCCESS);
    size_t ret = 99;
    if (p) CHECK_ERR(clGetMemObjectInfo(p, CL_MEM_PROPERTIES, 0, NULL, &ret), CL_SUCCESS);
    CHECK(ret == 0);
    release2(p, NULL);
    cl_mem_properties none[] = {0};
    p = clCreateImageWithProperties(ctx, none, 0, &f, &d2, NULL, &err);
    CHECK(p != NULL && err == CL_SUCCESS);
    cl_mem_properties back[2] = {7, 7};
    if (p) CHECK_ERR(clGetMemObjectInfo(p, CL_MEM_PROPERTIES, sizeof back, back, &ret), CL_SUCCESS);
    CHECK(ret == sizeof(cl_mem_properties) && back[0] == 0);
    release2(p, NULL);
    cl_mem_properties unknown[] = {0x7777, 1, 0};
    CHECK(clCreateImageWithProperties(ctx, unknown, 0, &f, &d2, NULL, &err) == NULL && err == CL_INVALID_PROPERTY);
    CHECK(clCreateImageWithProperties(NULL, NULL, 0, &f, &d2, NULL, &err) == NULL && err == CL_INVALID_CONTEXT);
    CHECK(clCreateImageWithProperties(ctx, NULL, 0, NULL, &d2, NULL, &err) == NULL &&
          err == CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
    CHECK(clCreateImageWithProperties(ctx, NULL, 0, &f, NULL, NULL, &err) == NULL &&
          err == CL_INVALID_IMAGE_DESCRIPTOR);

    /* The deprecated 1.x entry points follow the same rules. */
    cl_mem i2 = clCreateImage2D(ctx, 0, &f, W, H, 0, NULL, &err);
    CHECK(i2 != NULL && err == CL_SUCCESS);
    cl_mem_object_type ty = 0;
    if (i2) CHECK_ERR(clGetMemObjectInfo(i2, CL_MEM_TYPE, sizeof ty, &ty, NULL), CL_SUCCESS);
    CHECK(ty == CL_MEM_OBJECT_IMAGE2D);
    release2(i2, NULL);
    CHECK(clCreateImage2D(ctx, 0, &f, 0, H, 0, NULL, &err) == NULL && err == CL_INVALID_IMAGE_SIZE);
    CHECK(clCreateImage2D(ctx, 0, NULL, W, H, 0, NULL, &err) == NULL && err == CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
    cl_mem i3 = clCreateImage3D(ctx, 0, &f, W, H, D, 0, 0, NULL, &err);
    CHECK(i3 != NULL && err == CL_SUCCESS);
    release2(i3, NULL);
    /* "image_depth ... For clCreateImage3D, this must be a value > 1." */
    CHECK(clCreateImage3D(ctx, 0, &f, W, H, 1, 0, 0, NULL, &err) == NULL && err == CL_INVALID_IMAGE_SIZE);
}

static size_t img_size(cl_mem m, cl_image_info p) {
    size_t v = 12345;
    CHECK_ERR(clGetImageInfo(m, p, sizeof v, &v, NULL), CL_SUCCESS);
    return v;
}

/* clGetImageInfo and clGetMemObjectInfo for every image type, with tight
 * pitches and with the application's pitches of a USE_HOST_PTR image. */
static void test_image_info(void) {
    const cl_image_format f = {CL_RGBA, CL_UNSIGNED_INT16};
    const size_t es = 8;
    for (size_t t = 0; t < N_TYPES; t++) {
        cl_mem_object_type ty = image_types[t];
        cl_int err = 1;
        cl_mem buf = NULL;
        cl_mem m = make_image(ty, f, CL_MEM_READ_WRITE, &buf, &err);
        CHECK(m != NULL && err == CL_SUCCESS);
        if (!m) continue;
        cl_image_format got = {0, 0};
        size_t ret = 0;
        CHECK_ERR(clGetImageInfo(m, CL_IMAGE_FORMAT, sizeof got, &got, &ret), CL_SUCCESS);
        CHECK(ret == sizeof got && got.image_channel_order == f.image_channel_order &&
              got.image_channel_data_type == f.image_channel_data_type);
        CHECK(img_size(m, CL_IMAGE_ELEMENT_SIZE) == es);
        int is3d = ty == CL_MEM_OBJECT_IMAGE3D, is2darr = ty == CL_MEM_OBJECT_IMAGE2D_ARRAY;
        int has_h = ty == CL_MEM_OBJECT_IMAGE2D || is2darr || is3d;
        int arr = ty == CL_MEM_OBJECT_IMAGE1D_ARRAY || is2darr;
        CHECK(img_size(m, CL_IMAGE_ROW_PITCH) == W * es);
        size_t want_slice = ty == CL_MEM_OBJECT_IMAGE1D_ARRAY ? W * es : (is3d || is2darr) ? W * es * H : 0;
        size_t slice = img_size(m, CL_IMAGE_SLICE_PITCH);
        if (slice != want_slice) {
            printf("    %s image: CL_IMAGE_SLICE_PITCH %zu, expected %zu\n", type_name(ty), slice, want_slice);
            failed_checks++;
        }
        CHECK(img_size(m, CL_IMAGE_WIDTH) == W);
        CHECK(img_size(m, CL_IMAGE_HEIGHT) == (has_h ? (size_t)H : 0));
        CHECK(img_size(m, CL_IMAGE_DEPTH) == (is3d ? (size_t)D : 0));
        CHECK(img_size(m, CL_IMAGE_ARRAY_SIZE) == (arr ? (size_t)A : 0));
        cl_mem ib = (cl_mem)1;
        CHECK_ERR(clGetImageInfo(m, CL_IMAGE_BUFFER, sizeof ib, &ib, &ret), CL_SUCCESS);
        CHECK(ret == sizeof(cl_mem) && ib == buf);
        cl_uint u = 9;
        CHECK_ERR(clGetImageInfo(m, CL_IMAGE_NUM_MIP_LEVELS, sizeof u, &u, NULL), CL_SUCCESS);
        CHECK(u == 0);
        u = 9;
        CHECK_ERR(clGetImageInfo(m, CL_IMAGE_NUM_SAMPLES, sizeof u, &u, NULL), CL_SUCCESS);
        CHECK(u == 0);
        /* The memory object queries. */
        cl_mem_object_type mt = 0;
        CHECK_ERR(clGetMemObjectInfo(m, CL_MEM_TYPE, sizeof mt, &mt, NULL), CL_SUCCESS);
        CHECK(mt == ty);
        size_t size = 0;
        CHECK_ERR(clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof size, &size, NULL), CL_SUCCESS);
        CHECK(size >= full_bytes(ty, es));
        cl_mem assoc = (cl_mem)1;
        CHECK_ERR(clGetMemObjectInfo(m, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof assoc, &assoc, NULL), CL_SUCCESS);
        CHECK(assoc == buf);
        void *hp = (void *)1;
        CHECK_ERR(clGetMemObjectInfo(m, CL_MEM_HOST_PTR, sizeof hp, &hp, NULL), CL_SUCCESS);
        CHECK(hp == NULL);
        cl_context c = NULL;
        CHECK_ERR(clGetMemObjectInfo(m, CL_MEM_CONTEXT, sizeof c, &c, NULL), CL_SUCCESS);
        CHECK(c == ctx);
        size_t off = 9;
        CHECK_ERR(clGetMemObjectInfo(m, CL_MEM_OFFSET, sizeof off, &off, NULL), CL_SUCCESS);
        CHECK(off == 0);
        cl_uint refs = 0, maps = 9;
        CHECK_ERR(clGetMemObjectInfo(m, CL_MEM_REFERENCE_COUNT, sizeof refs, &refs, NULL), CL_SUCCESS);
        CHECK(refs == 1);
        CHECK_ERR(clGetMemObjectInfo(m, CL_MEM_MAP_COUNT, sizeof maps, &maps, NULL), CL_SUCCESS);
        CHECK(maps == 0);
        /* The param_value protocol. */
        size_t need = 0;
        CHECK_ERR(clGetImageInfo(m, CL_IMAGE_WIDTH, 0, NULL, &need), CL_SUCCESS);
        CHECK(need == sizeof(size_t));
        char small[2] = {'x', 'x'};
        CHECK_ERR(clGetImageInfo(m, CL_IMAGE_WIDTH, sizeof small, small, NULL), CL_INVALID_VALUE);
        CHECK_ERR(clGetImageInfo(m, CL_IMAGE_FORMAT, sizeof(cl_image_format) - 1, &got, NULL), CL_INVALID_VALUE);
        CHECK_ERR(clGetImageInfo(m, 0x7777, sizeof size, &size, NULL), CL_INVALID_VALUE);
        CHECK_ERR(clRetainMemObject(m), CL_SUCCESS);
        CHECK_ERR(clGetMemObjectInfo(m, CL_MEM_REFERENCE_COUNT, sizeof refs, &refs, NULL), CL_SUCCESS);
        CHECK(refs == 2);
        CHECK_ERR(clReleaseMemObject(m), CL_SUCCESS);
        release2(m, buf);
    }
    /* clGetImageInfo of something that is not an image. */
    cl_int err;
    cl_mem b = clCreateBuffer(ctx, 0, 64, NULL, &err);
    size_t v;
    CHECK_ERR(clGetImageInfo(b, CL_IMAGE_WIDTH, sizeof v, &v, NULL), CL_INVALID_MEM_OBJECT);
    CHECK_ERR(clGetImageInfo(NULL, CL_IMAGE_WIDTH, sizeof v, &v, NULL), CL_INVALID_MEM_OBJECT);
    release2(b, NULL);

    /* Pitches given with a host pointer are the image's pitches
     * (CL_IMAGE_ROW_PITCH / SLICE_PITCH "the value provided ... by the
     * application is returned"), for USE_HOST_PTR and COPY_HOST_PTR, and
     * CL_MEM_HOST_PTR is the pointer for USE_HOST_PTR only. */
    static uint64_t host[(W + 3) * (H + 1) * D * 2];
    const cl_mem_flags hflags[] = {CL_MEM_USE_HOST_PTR, CL_MEM_COPY_HOST_PTR};
    for (int k = 0; k < 2; k++) {
        cl_image_desc d = make_desc(CL_MEM_OBJECT_IMAGE3D, NULL);
        d.image_row_pitch = (W + 3) * es;
        d.image_slice_pitch = (W + 3) * es * (H + 1);
        cl_mem m = clCreateImage(ctx, hflags[k], &f, &d, host, &err);
        CHECK(m != NULL && err == CL_SUCCESS);
        if (!m) continue;
        CHECK(img_size(m, CL_IMAGE_ROW_PITCH) == d.image_row_pitch);
        CHECK(img_size(m, CL_IMAGE_SLICE_PITCH) == d.image_slice_pitch);
        void *hp = (void *)1;
        CHECK_ERR(clGetMemObjectInfo(m, CL_MEM_HOST_PTR, sizeof hp, &hp, NULL), CL_SUCCESS);
        CHECK(hp == (k == 0 ? (void *)host : NULL));
        release2(m, NULL);
        /* A 1D image array with a slice pitch of its own (a multiple of
         * the row pitch). */
        d = make_desc(CL_MEM_OBJECT_IMAGE1D_ARRAY, NULL);
        d.image_row_pitch = (W + 1) * es;
        d.image_slice_pitch = 2 * (W + 1) * es;
        m = clCreateImage(ctx, hflags[k], &f, &d, host, &err);
        CHECK(m != NULL && err == CL_SUCCESS);
        if (!m) continue;
        CHECK(img_size(m, CL_IMAGE_ROW_PITCH) == (W + 1) * es);
        CHECK(img_size(m, CL_IMAGE_SLICE_PITCH) == 2 * (W + 1) * es);
        release2(m, NULL);
        /* Host pointer with pitches 0: tight. */
        d = make_desc(CL_MEM_OBJECT_IMAGE2D_ARRAY, NULL);
        m = clCreateImage(ctx, hflags[k], &f, &d, host, &err);
        CHECK(m != NULL && err == CL_SUCCESS);
        if (!m) continue;
        CHECK(img_size(m, CL_IMAGE_ROW_PITCH) == W * es);
        CHECK(img_size(m, CL_IMAGE_SLICE_PITCH) == W * es * H);
        release2(m, NULL);
    }
}

/* Samplers: creation with every valid mode, the queries, the defaults of
 * clCreateSamplerWithProperties, the reference count, and the errors. */
static void test_samplers(void) {
    const cl_addressing_mode modes[] = {CL_ADDRESS_NONE, CL_ADDRESS_CLAMP_TO_EDGE, CL_ADDRESS_CLAMP,
                                        CL_ADDRESS_REPEAT, CL_ADDRESS_MIRRORED_REPEAT};
    const cl_filter_mode filters[] = {CL_FILTER_NEAREST, CL_FILTER_LINEAR};
    cl_int err = 1;
    for (int norm = 0; norm < 2; norm++)
        for (size_t a = 0; a < 5; a++)
            for (size_t fi = 0; fi < 2; fi++) {
                /* REPEAT and MIRRORED_REPEAT need normalized coordinates:
                 * "a combination of these arguments are not valid". */
                int valid = norm || (modes[a] != CL_ADDRESS_REPEAT && modes[a] != CL_ADDRESS_MIRRORED_REPEAT);
                cl_sampler s = clCreateSampler(ctx, norm ? CL_TRUE : CL_FALSE, modes[a], filters[fi], &err);
                if (!valid) {
                    CHECK(s == NULL && err == CL_INVALID_VALUE);
                    if (s) clReleaseSampler(s);
                    continue;
                }
                CHECK(s != NULL && err == CL_SUCCESS);
                if (!s) continue;
                cl_bool nc = 7;
                cl_addressing_mode am = 0;
                cl_filter_mode fm = 0;
                CHECK_ERR(clGetSamplerInfo(s, CL_SAMPLER_NORMALIZED_COORDS, sizeof nc, &nc, NULL), CL_SUCCESS);
                CHECK(nc == (norm ? CL_TRUE : CL_FALSE));
                CHECK_ERR(clGetSamplerInfo(s, CL_SAMPLER_ADDRESSING_MODE, sizeof am, &am, NULL), CL_SUCCESS);
                CHECK(am == modes[a]);
                CHECK_ERR(clGetSamplerInfo(s, CL_SAMPLER_FILTER_MODE, sizeof fm, &fm, NULL), CL_SUCCESS);
                CHECK(fm == filters[fi]);
                /* clCreateSampler has no properties: size 0. */
                size_t ret = 99;
                CHECK_ERR(clGetSamplerInfo(s, CL_SAMPLER_PROPERTIES, 0, NULL, &ret), CL_SUCCESS);
                CHECK(ret == 0);
                clReleaseSampler(s);
            }

    /* Defaults: normalized, CLAMP, NEAREST. */
    cl_sampler s = clCreateSamplerWithProperties(ctx, NULL, &err);
    CHECK_ERR(err, CL_SUCCESS);
    if (s) {
        cl_bool nc = 7;
        cl_addressing_mode am = 0;
        cl_filter_mode fm = 0;
        CHECK_ERR(clGetSamplerInfo(s, CL_SAMPLER_NORMALIZED_COORDS, sizeof nc, &nc, NULL), CL_SUCCESS);
        CHECK_ERR(clGetSamplerInfo(s, CL_SAMPLER_ADDRESSING_MODE, sizeof am, &am, NULL), CL_SUCCESS);
        CHECK_ERR(clGetSamplerInfo(s, CL_SAMPLER_FILTER_MODE, sizeof fm, &fm, NULL), CL_SUCCESS);
        CHECK(nc == CL_TRUE && am == CL_ADDRESS_CLAMP && fm == CL_FILTER_NEAREST);
        size_t ret = 99;
        CHECK_ERR(clGetSamplerInfo(s, CL_SAMPLER_PROPERTIES, 0, NULL, &ret), CL_SUCCESS);
        CHECK(ret == 0);
        cl_context c = NULL;
        CHECK_ERR(clGetSamplerInfo(s, CL_SAMPLER_CONTEXT, sizeof c, &c, &ret), CL_SUCCESS);
        CHECK(c == ctx && ret == sizeof c);
        cl_uint refs = 0;
        CHECK_ERR(clGetSamplerInfo(s, CL_SAMPLER_REFERENCE_COUNT, sizeof refs, &refs, NULL), CL_SUCCESS);
        CHECK(refs == 1);
        CHECK_ERR(clRetainSampler(s), CL_SUCCESS);
        CHECK_ERR(clGetSamplerInfo(s, CL_SAMPLER_REFERENCE_COUNT, sizeof refs, &refs, NULL), CL_SUCCESS);
        CHECK(refs == 2);
        CHECK_ERR(clReleaseSampler(s), CL_SUCCESS);
        /* param_value protocol. */
        char small = 'x';
        CHECK_ERR(clGetSamplerInfo(s, CL_SAMPLER_ADDRESSING_MODE, 1, &small, NULL), CL_INVALID_VALUE);
        CHECK_ERR(clGetSamplerInfo(s, 0x7777, sizeof refs, &refs, NULL), CL_INVALID_VALUE);
        CHECK_ERR(clReleaseSampler(s), CL_SUCCESS);
    }
    /* A properties list comes back as given, in order, partial lists keep
     * the defaults of what they leave out. */
    cl_sampler_properties props[] = {CL_SAMPLER_FILTER_MODE, CL_FILTER_LINEAR, CL_SAMPLER_NORMALIZED_COORDS, CL_FALSE,
                                     0};
    s = clCreateSamplerWithProperties(ctx, props, &err);
    CHECK(s != NULL && err == CL_SUCCESS);
    if (s) {
        cl_sampler_properties back[8];
        size_t ret = 0;
        CHECK_ERR(clGetSamplerInfo(s, CL_SAMPLER_PROPERTIES, sizeof back, back, &ret), CL_SUCCESS);
        CHECK(ret == sizeof props && memcmp(back, props, sizeof props) == 0);
        cl_addressing_mode am = 0;
        CHECK_ERR(clGetSamplerInfo(s, CL_SAMPLER_ADDRESSING_MODE, sizeof am, &am, NULL), CL_SUCCESS);
        CHECK(am == CL_ADDRESS_CLAMP);
        cl_filter_mode fm = 0;
        CHECK_ERR(clGetSamplerInfo(s, CL_SAMPLER_FILTER_MODE, sizeof fm, &fm, NULL), CL_SUCCESS);
        CHECK(fm == CL_FILTER_LINEAR);
        clReleaseSampler(s);
    }

    /* Errors of clCreateSampler. */
    CHECK(clCreateSampler(NULL, CL_TRUE, CL_ADDRESS_CLAMP, CL_FILTER_NEAREST, &err) == NULL &&
          err == CL_INVALID_CONTEXT);
    CHECK(clCreateSampler((cl_context)queue, CL_TRUE, CL_ADDRESS_CLAMP, CL_FILTER_NEAREST, &err) == NULL &&
          err == CL_INVALID_CONTEXT);
    CHECK(clCreateSampler(ctx, CL_TRUE, 0x7777, CL_FILTER_NEAREST, &err) == NULL && err == CL_INVALID_VALUE);
    CHECK(clCreateSampler(ctx, CL_TRUE, CL_ADDRESS_CLAMP, 0x7777, &err) == NULL && err == CL_INVALID_VALUE);
    /* Errors of clCreateSamplerWithProperties: an unknown name, a bad value,
     * a name given twice, an invalid combination. */
    cl_sampler_properties unknown[] = {0x7777, 1, 0};
    CHECK(clCreateSamplerWithProperties(ctx, unknown, &err) == NULL && err == CL_INVALID_VALUE);
    cl_sampler_properties badv[] = {CL_SAMPLER_ADDRESSING_MODE, 0x7777, 0};
    CHECK(clCreateSamplerWithProperties(ctx, badv, &err) == NULL && err == CL_INVALID_VALUE);
    cl_sampler_properties badf[] = {CL_SAMPLER_FILTER_MODE, 0x7777, 0};
    CHECK(clCreateSamplerWithProperties(ctx, badf, &err) == NULL && err == CL_INVALID_VALUE);
    cl_sampler_properties twice[] = {CL_SAMPLER_FILTER_MODE, CL_FILTER_LINEAR, CL_SAMPLER_FILTER_MODE,
                                     CL_FILTER_NEAREST, 0};
    CHECK(clCreateSamplerWithProperties(ctx, twice, &err) == NULL && err == CL_INVALID_VALUE);
    cl_sampler_properties combo[] = {CL_SAMPLER_NORMALIZED_COORDS, CL_FALSE, CL_SAMPLER_ADDRESSING_MODE,
                                     CL_ADDRESS_REPEAT, 0};
    CHECK(clCreateSamplerWithProperties(ctx, combo, &err) == NULL && err == CL_INVALID_VALUE);
    CHECK(clCreateSamplerWithProperties(NULL, NULL, &err) == NULL && err == CL_INVALID_CONTEXT);
    /* Handles that are not samplers. */
    cl_uint refs;
    CHECK_ERR(clRetainSampler(NULL), CL_INVALID_SAMPLER);
    CHECK_ERR(clReleaseSampler(NULL), CL_INVALID_SAMPLER);
    CHECK_ERR(clGetSamplerInfo(NULL, CL_SAMPLER_REFERENCE_COUNT, sizeof refs, &refs, NULL), CL_INVALID_SAMPLER);
    CHECK_ERR(clRetainSampler((cl_sampler)queue), CL_INVALID_SAMPLER);
    CHECK_ERR(clGetSamplerInfo((cl_sampler)ctx, CL_SAMPLER_REFERENCE_COUNT, sizeof refs, &refs, NULL),
              CL_INVALID_SAMPLER);
}

/* The buffer commands refuse images, the image commands buffers. */
static void test_images_are_not_buffers(void) {
    cl_int err;
    cl_image_format f = {CL_RGBA, CL_UNORM_INT8};
    cl_mem img = make_image(CL_MEM_OBJECT_IMAGE2D, f, 0, NULL, &err);
    cl_mem b = clCreateBuffer(ctx, 0, 4096, NULL, &err);
    unsigned char host[4096];
    CHECK_ERR(clEnqueueReadBuffer(queue, img, CL_TRUE, 0, 16, host, 0, NULL, NULL), CL_INVALID_MEM_OBJECT);
    CHECK_ERR(clEnqueueWriteBuffer(queue, img, CL_TRUE, 0, 16, host, 0, NULL, NULL), CL_INVALID_MEM_OBJECT);
    CHECK_ERR(clEnqueueCopyBuffer(queue, img, b, 0, 0, 16, 0, NULL, NULL), CL_INVALID_MEM_OBJECT);
    CHECK_ERR(clEnqueueCopyBuffer(queue, b, img, 0, 0, 16, 0, NULL, NULL), CL_INVALID_MEM_OBJECT);
    unsigned char zero = 0;
    CHECK_ERR(clEnqueueFillBuffer(queue, img, &zero, 1, 0, 16, 0, NULL, NULL), CL_INVALID_MEM_OBJECT);
    void *p = clEnqueueMapBuffer(queue, img, CL_TRUE, CL_MAP_READ, 0, 16, 0, NULL, NULL, &err);
    CHECK(p == NULL && err == CL_INVALID_MEM_OBJECT);
    cl_buffer_region r = {0, 16};
    CHECK(clCreateSubBuffer(img, 0, CL_BUFFER_CREATE_TYPE_REGION, &r, &err) == NULL && err == CL_INVALID_MEM_OBJECT);
    size_t o[3] = {0, 0, 0}, rg[3] = {1, 1, 1};
    CHECK_ERR(clEnqueueReadImage(queue, b, CL_TRUE, o, rg, 0, 0, host, 0, NULL, NULL), CL_INVALID_MEM_OBJECT);
    CHECK_ERR(clEnqueueWriteImage(queue, b, CL_TRUE, o, rg, 0, 0, host, 0, NULL, NULL), CL_INVALID_MEM_OBJECT);
    size_t rp, sp;
    p = clEnqueueMapImage(queue, b, CL_TRUE, CL_MAP_READ, o, rg, &rp, &sp, 0, NULL, NULL, &err);
    CHECK(p == NULL && err == CL_INVALID_MEM_OBJECT);
    float color[4] = {0, 0, 0, 0};
    CHECK_ERR(clEnqueueFillImage(queue, b, color, o, rg, 0, NULL, NULL), CL_INVALID_MEM_OBJECT);
    CHECK_ERR(clEnqueueCopyImage(queue, b, img, o, o, rg, 0, NULL, NULL), CL_INVALID_MEM_OBJECT);
    CHECK_ERR(clEnqueueCopyImage(queue, img, b, o, o, rg, 0, NULL, NULL), CL_INVALID_MEM_OBJECT);
    CHECK_ERR(clEnqueueCopyImageToBuffer(queue, b, b, o, rg, 0, 0, NULL, NULL), CL_INVALID_MEM_OBJECT);
    CHECK_ERR(clEnqueueCopyImageToBuffer(queue, img, img, o, rg, 0, 0, NULL, NULL), CL_INVALID_MEM_OBJECT);
    CHECK_ERR(clEnqueueCopyBufferToImage(queue, img, img, 0, o, rg, 0, NULL, NULL), CL_INVALID_MEM_OBJECT);
    CHECK_ERR(clEnqueueCopyBufferToImage(queue, b, b, 0, o, rg, 0, NULL, NULL), CL_INVALID_MEM_OBJECT);
    release2(img, b);
}

/* 2D images from buffers (core in OpenCL 2.0, cl_khr_image2d_from_buffer
 * in 3.0; run where CL_DEVICE_IMAGE_PITCH_ALIGNMENT is not 0): the image's
 * pixels are the buffer's bytes at the row pitch, the row pitch must be a
 * multiple of the pitch alignment (in pixels) or
 * CL_INVALID_IMAGE_FORMAT_DESCRIPTOR (v3.0.18: "if a 2D image is created
 * from a buffer and the row pitch and base address alignment does not
 * follow the rules"), and the image reports its buffer. */
static void test_image2d_from_buffer(void) {
    cl_uint align = dev_uint(CL_DEVICE_IMAGE_PITCH_ALIGNMENT);
    cl_image_format f = {CL_RGBA, CL_UNSIGNED_INT8};
    size_t es = 4, rp = ((W + align - 1) / align) * align * es;
    cl_int err;
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, rp * H, NULL, &err);
    unsigned char *bytes = malloc(rp * H);
    if (!b || !bytes) {
        CHECK(b && bytes);
        free(bytes);
        release2(b, NULL);
        return;
    }
    pattern(bytes, rp * H, 60);
    CHECK_ERR(clEnqueueWriteBuffer(queue, b, CL_TRUE, 0, rp * H, bytes, 0, NULL, NULL), CL_SUCCESS);
    cl_image_desc d = make_desc(CL_MEM_OBJECT_IMAGE2D, b);
    d.image_row_pitch = rp;
    cl_mem m = clCreateImage(ctx, 0, &f, &d, NULL, &err);
    CHECK(m != NULL && err == CL_SUCCESS);
    if (m) {
        unsigned char out[W * H * 4];
        CHECK_ERR(read_all(m, CL_MEM_OBJECT_IMAGE2D, out), CL_SUCCESS);
        size_t wrong = 0;
        for (size_t y = 0; y < H; y++) wrong += memcmp(out + y * W * es, bytes + y * rp, W * es) != 0;
        CHECK(wrong == 0);
        CHECK(img_size(m, CL_IMAGE_ROW_PITCH) == rp);
        cl_mem assoc = NULL;
        CHECK_ERR(clGetMemObjectInfo(m, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof assoc, &assoc, NULL), CL_SUCCESS);
        CHECK(assoc == b);
        release2(m, NULL);
    }
    if (align > 1) {
        d.image_row_pitch = rp + es;
        cl_mem bad = clCreateImage(ctx, 0, &f, &d, NULL, &err);
        CHECK(bad == NULL && err == CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
        release2(bad, NULL);
    }
    free(bytes);
    release2(b, NULL);
}

/* A 2D image from another 2D image: the same pixels viewed with a
 * compatible channel order (the "Compatible Image Channel Orders" table:
 * RGBA <-> sRGBA, BGRA <-> sBGRA, ...); the data type and descriptor must
 * match, else CL_INVALID_IMAGE_FORMAT_DESCRIPTOR ("if a 2D image is created
 * from a 2D image object and the rules described above are not followed").
 * Run where the context supports CL_sRGBA with CL_UNORM_INT8. */
static void test_image_from_image(void) {
    cl_int err;
    cl_image_format rgba = {CL_RGBA, CL_UNORM_INT8}, srgba = {CL_sRGBA, CL_UNORM_INT8};
    cl_mem src = make_image(CL_MEM_OBJECT_IMAGE2D, rgba, 0, NULL, &err);
    CHECK(src != NULL);
    if (!src) return;
    unsigned char in[W * H * 4], out[W * H * 4];
    pattern(in, sizeof in, 70);
    CHECK_ERR(write_all(src, CL_MEM_OBJECT_IMAGE2D, in), CL_SUCCESS);
    cl_image_desc d = make_desc(CL_MEM_OBJECT_IMAGE2D, src);
    cl_mem view = clCreateImage(ctx, 0, &srgba, &d, NULL, &err);
    CHECK(view != NULL && err == CL_SUCCESS);
    if (view) {
        /* The bytes are shared, not converted. */
        CHECK_ERR(read_all(view, CL_MEM_OBJECT_IMAGE2D, out), CL_SUCCESS);
        CHECK(memcmp(in, out, sizeof in) == 0);
        cl_mem assoc = NULL;
        CHECK_ERR(clGetMemObjectInfo(view, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof assoc, &assoc, NULL), CL_SUCCESS);
        CHECK(assoc == src);
        cl_image_format got = {0, 0};
        CHECK_ERR(clGetImageInfo(view, CL_IMAGE_FORMAT, sizeof got, &got, NULL), CL_SUCCESS);
        CHECK(got.image_channel_order == CL_sRGBA);
        release2(view, NULL);
    }
    /* Not a compatible order, another data type, another size. */
    cl_image_format bgra = {CL_BGRA, CL_UNORM_INT8}, rgba16 = {CL_RGBA, CL_UNORM_INT16};
    CHECK(clCreateImage(ctx, 0, &bgra, &d, NULL, &err) == NULL && err == CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
    CHECK(clCreateImage(ctx, 0, &rgba16, &d, NULL, &err) == NULL && err == CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
    d.image_width = W - 1;
    CHECK(clCreateImage(ctx, 0, &srgba, &d, NULL, &err) == NULL && err == CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
    release2(src, NULL);
}

/* An accelerator of the platform that reports no image support, or NULL. */
static cl_device_id no_image_device(void) {
    cl_device_id devs[16];
    cl_uint n = 0;
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ACCELERATOR, 16, devs, &n) != CL_SUCCESS) return NULL;
    for (cl_uint i = 0; i < n && i < 16; i++) {
        cl_bool s = CL_TRUE;
        if (clGetDeviceInfo(devs[i], CL_DEVICE_IMAGE_SUPPORT, sizeof s, &s, NULL) == CL_SUCCESS && !s) return devs[i];
    }
    return NULL;
}

/* A device without image support: its limits are 0, a context of it alone
 * refuses images and samplers with CL_INVALID_OPERATION and supports no
 * format; in a context with the CPU device images are made, but its queue
 * refuses the image commands ("the device associated with command_queue
 * does not support images"). */
static void test_device_without_images(void) {
    cl_device_id dev = no_image_device();
    size_t v = 9;
    CHECK_ERR(clGetDeviceInfo(dev, CL_DEVICE_IMAGE2D_MAX_WIDTH, sizeof v, &v, NULL), CL_SUCCESS);
    CHECK(v == 0);
    cl_uint u = 9;
    CHECK_ERR(clGetDeviceInfo(dev, CL_DEVICE_MAX_SAMPLERS, sizeof u, &u, NULL), CL_SUCCESS);
    CHECK(u == 0);
    cl_int err;
    cl_context c = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK(c != NULL && err == CL_SUCCESS);
    if (!c) return;
    cl_image_format f = {CL_RGBA, CL_UNORM_INT8};
    cl_image_desc d = make_desc(CL_MEM_OBJECT_IMAGE2D, NULL);
    CHECK(clCreateImage(c, 0, &f, &d, NULL, &err) == NULL && err == CL_INVALID_OPERATION);
    CHECK(clCreateImageWithProperties(c, NULL, 0, &f, &d, NULL, &err) == NULL && err == CL_INVALID_OPERATION);
    CHECK(clCreateImage2D(c, 0, &f, W, H, 0, NULL, &err) == NULL && err == CL_INVALID_OPERATION);
    CHECK(clCreateSampler(c, CL_TRUE, CL_ADDRESS_CLAMP, CL_FILTER_NEAREST, &err) == NULL &&
          err == CL_INVALID_OPERATION);
    CHECK(clCreateSamplerWithProperties(c, NULL, &err) == NULL && err == CL_INVALID_OPERATION);
    cl_uint n = 9;
    CHECK_ERR(clGetSupportedImageFormats(c, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, 0, NULL, &n), CL_SUCCESS);
    CHECK(n == 0);
    clReleaseContext(c);

    cl_device_id both[] = {device, dev};
    c = clCreateContext(NULL, 2, both, NULL, NULL, &err);
    CHECK(c != NULL && err == CL_SUCCESS);
    if (!c) return;
    cl_mem img = clCreateImage(c, 0, &f, &d, NULL, &err);
    CHECK(img != NULL && err == CL_SUCCESS);
    cl_command_queue q = clCreateCommandQueueWithProperties(c, dev, NULL, &err);
    CHECK(q != NULL);
    if (img && q) {
        unsigned char host[W * H * 4];
        size_t o[3] = {0, 0, 0}, r[3] = {W, H, 1}, rp, sp;
        CHECK_ERR(clEnqueueReadImage(q, img, CL_TRUE, o, r, 0, 0, host, 0, NULL, NULL), CL_INVALID_OPERATION);
        CHECK_ERR(clEnqueueWriteImage(q, img, CL_TRUE, o, r, 0, 0, host, 0, NULL, NULL), CL_INVALID_OPERATION);
        float color[4] = {0, 0, 0, 0};
        CHECK_ERR(clEnqueueFillImage(q, img, color, o, r, 0, NULL, NULL), CL_INVALID_OPERATION);
        CHECK_ERR(clEnqueueCopyImage(q, img, img, o, o, (size_t[3]){1, 1, 1}, 0, NULL, NULL), CL_INVALID_OPERATION);
        void *p = clEnqueueMapImage(q, img, CL_TRUE, CL_MAP_READ, o, r, &rp, &sp, 0, NULL, NULL, &err);
        CHECK(p == NULL && err == CL_INVALID_OPERATION);
        cl_mem b = clCreateBuffer(c, 0, sizeof host, NULL, &err);
        CHECK_ERR(clEnqueueCopyImageToBuffer(q, img, b, o, r, 0, 0, NULL, NULL), CL_INVALID_OPERATION);
        CHECK_ERR(clEnqueueCopyBufferToImage(q, b, img, 0, o, r, 0, NULL, NULL), CL_INVALID_OPERATION);
        release2(b, NULL);
    }
    if (q) clReleaseCommandQueue(q);
    release2(img, NULL);
    clReleaseContext(c);
}

int main(void) {
    images_setup();
    int ready = platform && device && ctx && queue;
    static const struct test_case tests[] = {
        {"images_accept::device_image_queries", test_device_image_queries},
        {"images_accept::supported_formats", test_supported_formats},
        {"images_accept::create_errors", test_create_errors},
        {"images_accept::image_info", test_image_info},
        {"images_accept::samplers", test_samplers},
        {"images_accept::images_are_not_buffers", test_images_are_not_buffers},
    };
    RUN_TESTS(tests, ready);
    if (ready && dev_uint(CL_DEVICE_IMAGE_PITCH_ALIGNMENT) != 0)
        run_test("images_accept::image2d_from_buffer", test_image2d_from_buffer, 1);
    else
        ignore_test("images_accept::image2d_from_buffer", "CL_DEVICE_IMAGE_PITCH_ALIGNMENT is 0: no 2D images from buffers");
    cl_uint nf = 0;
    cl_image_format *fl = ready ? supported(ctx, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, &nf) : NULL;
    if (fl && has_format(fl, nf, (cl_image_format){CL_sRGBA, CL_UNORM_INT8}))
        run_test("images_accept::image_from_image", test_image_from_image, 1);
    else
        ignore_test("images_accept::image_from_image", "no CL_sRGBA / CL_UNORM_INT8 2D images");
    free(fl);
    if (ready && no_image_device())
        run_test("images_accept::device_without_images", test_device_without_images, 1);
    else
        ignore_test("images_accept::device_without_images", "no accelerator without image support (the guest's edu)");
    images_teardown();
    return finish_tests();
}
