/* C tests of what programs get from PoCL on the CPU device, through the real
 * loader. Binaries (driver/dmabridge-icd/src/api/binary.rs): an executable's
 * and a compiled object's binary come out of CL_PROGRAM_BINARIES and go back
 * in through clCreateProgramWithBinary (then built, or linked) and run; a
 * binary PoCL refuses is CL_INVALID_BINARY with its status; there is no IL
 * (PoCL 3.1 has none): clCreateProgramWithIL answers CL_INVALID_OPERATION.
 * The OpenCL C PoCL gives (driver/dmabridge-icd/src/pocl/language.rs):
 * CL_DEVICE_EXTENSIONS / _WITH_VERSION list PoCL's OpenCL C extensions beside
 * dmabridge's own and none of PoCL's API extensions; a device of OpenCL C
 * 1.1 or later lists what OpenCL 3.0 requires of that version; cl_khr_fp64
 * goes with a double-precision configuration; CL_DEVICE_OPENCL_C_FEATURES
 * agree with the device's other answers; and every extension and feature
 * reported is really there: a program that checks each one's macro builds
 * (with -cl-std=CL3.0 where listed, which defines the feature macros) and its
 * kernels that use 64-bit atomics, doubles and 3D image writes work; and each
 * language extension the compiler defines (of those the device can back) is
 * reported.
 * (Without PoCL none of this is reported: kernels_test.c, run with
 * DMABRIDGE_POCL=off, checks that.) Without PoCL every test is ignored,
 * unless DMABRIDGE_EXPECT_POCL=1 (tests/icd/run on x86_64), when that fails.
 * In the QEMU guests (--devices-only) nothing runs: no device is needed, and
 * PoCL's compiles are slow there. Closing line: "N passed, N failed". */
#define _GNU_SOURCE
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
static clHostMemAllocINTEL_fn host_alloc;
static clMemFreeINTEL_fn mem_free;
static clSetKernelArgMemPointerINTEL_fn set_arg_ptr;

static char extensions[8192];
static cl_name_version ext_versions[128], features[64];
static size_t n_ext_versions, n_features;

static int has_feature(const char *name) {
    for (size_t i = 0; i < n_features; i++)
        if (strcmp(features[i].name, name) == 0) return 1;
    return 0;
}

static void test_extensions_are_the_compilers_and_dmabridges(void) {
    /* The string and the list name the same extensions in the same order. */
    char joined[8192] = {0};
    for (size_t i = 0; i < n_ext_versions; i++) {
        if (i) strcat(joined, " ");
        strcat(joined, ext_versions[i].name);
    }
    CHECK(strcmp(joined, extensions) == 0);
    /* dmabridge's own extensions stay. */
    CHECK(has_word(extensions, "cl_intel_unified_shared_memory"));
    /* PoCL's device lists API extensions dmabridge's platform does not
     * implement: never passed on. */
    CHECK(!has_word(extensions, "cl_khr_spir"));
    CHECK(!has_word(extensions, "cl_khr_command_buffer"));
    CHECK(!has_word(extensions, "cl_khr_il_program"));
    CHECK(!has_word(extensions, "cl_khr_icd"));
    /* OpenCL 3.0, CL_DEVICE_EXTENSIONS: what a device of OpenCL C 1.1 or
     * later must list. */
    char ver[64] = {0};
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_OPENCL_C_VERSION, sizeof ver, ver, NULL), CL_SUCCESS);
    int major = 0, minor = 0;
    CHECK(sscanf(ver, "OpenCL C %d.%d", &major, &minor) == 2);
    if (major > 1 || (major == 1 && minor >= 1)) {
        static const char *required[] = {"cl_khr_byte_addressable_store", "cl_khr_global_int32_base_atomics",
                                         "cl_khr_global_int32_extended_atomics", "cl_khr_local_int32_base_atomics",
                                         "cl_khr_local_int32_extended_atomics"};
        for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
            if (!has_word(extensions, required[i])) printf("    %s lacks %s\n", ver, required[i]);
            CHECK(has_word(extensions, required[i]));
        }
    }
    /* cl_khr_fp64 exactly when doubles are configured (OpenCL 3.0: at
     * least FMA, round to nearest, INF and NaN, denormals), with vector
     * widths, and __opencl_c_fp64 with it. */
    cl_device_fp_config fp = 0;
    cl_uint pref = 0, native = 0;
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp, &fp, NULL), CL_SUCCESS);
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_PREFERRED_VECTOR_WIDTH_DOUBLE, sizeof pref, &pref, NULL), CL_SUCCESS);
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_NATIVE_VECTOR_WIDTH_DOUBLE, sizeof native, &native, NULL), CL_SUCCESS);
    const cl_device_fp_config min = CL_FP_FMA | CL_FP_ROUND_TO_NEAREST | CL_FP_INF_NAN | CL_FP_DENORM;
    if (has_word(extensions, "cl_khr_fp64")) {
        CHECK((fp & min) == min && pref > 0 && native > 0);
    } else {
        CHECK(fp == 0 && pref == 0 && native == 0);
    }
    CHECK(has_word(extensions, "cl_khr_fp64") == has_feature("__opencl_c_fp64"));
    CHECK(has_word(extensions, "cl_khr_3d_image_writes") == has_feature("__opencl_c_3d_image_writes"));
    /* Features the device's other answers must back. */
    cl_bool images = 0;
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_IMAGE_SUPPORT, sizeof images, &images, NULL), CL_SUCCESS);
    if (has_feature("__opencl_c_images")) CHECK(images == CL_TRUE);
    cl_uint rw = 0;
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_MAX_READ_WRITE_IMAGE_ARGS, sizeof rw, &rw, NULL), CL_SUCCESS);
    if (has_feature("__opencl_c_read_write_images")) CHECK(rw > 0);
    cl_bool generic = 1;
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_GENERIC_ADDRESS_SPACE_SUPPORT, sizeof generic, &generic, NULL),
              CL_SUCCESS);
    CHECK(has_feature("__opencl_c_generic_address_space") == (generic == CL_TRUE));
    CHECK(!has_feature("__opencl_c_pipes") && !has_feature("__opencl_c_device_enqueue"));
    cl_device_atomic_capabilities atomics = 0;
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES, sizeof atomics, &atomics, NULL),
              CL_SUCCESS);
    if (has_feature("__opencl_c_atomic_order_seq_cst")) CHECK(atomics & CL_DEVICE_ATOMIC_ORDER_SEQ_CST);
    if (has_feature("__opencl_c_atomic_scope_device")) CHECK(atomics & CL_DEVICE_ATOMIC_SCOPE_DEVICE);
}

/* "#ifndef NAME / #error" for each name, appended to src. */
static void require_macro(char *src, size_t cap, const char *name) {
    size_t n = strlen(src);
    snprintf(src + n, cap - n, "#ifndef %s\n#error \"%s is reported and not defined\"\n#endif\n", name, name);
}

static void test_what_is_reported_is_there(void) {
    static char src[32768];
    src[0] = 0;
    for (size_t i = 0; i < n_ext_versions; i++)
        if (strncmp(ext_versions[i].name, "cl_khr_", 7) == 0 && strstr(ext_versions[i].name, "atomics") != NULL)
            require_macro(src, sizeof src, ext_versions[i].name);
    if (has_word(extensions, "cl_khr_fp64")) require_macro(src, sizeof src, "cl_khr_fp64");
    if (has_word(extensions, "cl_khr_byte_addressable_store"))
        require_macro(src, sizeof src, "cl_khr_byte_addressable_store");
    /* Feature macros exist in OpenCL C 3.0 only. */
    cl_name_version all[16];
    size_t size = 0;
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_OPENCL_C_ALL_VERSIONS, sizeof all, all, &size), CL_SUCCESS);
    int c3 = 0;
    for (size_t i = 0; i < size / sizeof all[0]; i++) c3 |= all[i].version == CL_MAKE_VERSION(3, 0, 0);
    if (c3)
        for (size_t i = 0; i < n_features; i++) require_macro(src, sizeof src, features[i].name);
    /* And the other way: each language extension the compiler defines, of
     * those the device can back, is reported (PoCL's, not a list of ours). */
    static const char *language[] = {
        "cl_khr_byte_addressable_store",   "cl_khr_global_int32_base_atomics", "cl_khr_global_int32_extended_atomics",
        "cl_khr_local_int32_base_atomics", "cl_khr_local_int32_extended_atomics", "cl_khr_int64_base_atomics",
        "cl_khr_int64_extended_atomics",   "cl_khr_fp64",                        "cl_khr_3d_image_writes"};
    enum { NL = sizeof language / sizeof language[0] };
    strcat(src, "kernel void defined(global uint *f) {\n");
    for (int i = 0; i < NL; i++) {
        size_t n = strlen(src);
        snprintf(src + n, sizeof src - n, "#ifdef %s\n f[%d] = 1;\n#else\n f[%d] = 0;\n#endif\n", language[i], i, i);
    }
    strcat(src, "}\n");
    int int64_atomics = has_word(extensions, "cl_khr_int64_base_atomics");
    int fp64 = has_word(extensions, "cl_khr_fp64");
    int writes3d = has_word(extensions, "cl_khr_3d_image_writes");
    if (writes3d)
        strcat(src, "#pragma OPENCL EXTENSION cl_khr_3d_image_writes : enable\n"
                    "kernel void write3d(write_only image3d_t img) {\n"
                    "    int4 at = (int4)(get_global_id(0), get_global_id(1), get_global_id(2), 0);\n"
                    "    write_imageui(img, at, (uint4)(at.x, at.y, at.z, 7));\n"
                    "}\n");
    strcat(src, "kernel void bytes(global uchar *p) { p[get_global_id(0)] = (uchar)(get_global_id(0) * 3); }\n");
    if (int64_atomics)
        strcat(src, "#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n"
                    "kernel void count(volatile global long *c) { atom_add(c, 0x100000000L); }\n");
    if (fp64)
        strcat(src, "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
                    "kernel void root(global double *p) { size_t i = get_global_id(0); p[i] = sqrt((double)i); }\n");
    cl_int err = 1;
    const char *s = src;
    cl_program p = clCreateProgramWithSource(ctx, 1, &s, NULL, &err);
    err = clBuildProgram(p, 1, &device, c3 ? "-cl-std=CL3.0" : NULL, NULL, NULL);
    if (err != CL_SUCCESS) {
        static char log[16384];
        clGetProgramBuildInfo(p, device, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
        printf("    build (%d): %s\n", err, log);
    }
    CHECK_ERR(err, CL_SUCCESS);
    if (err != CL_SUCCESS) {
        clReleaseProgram(p);
        return;
    }
    enum { N = 256 };
    size_t g = N;
    void *mem = host_alloc(ctx, NULL, N * sizeof(cl_double), 0, &err);
    CHECK(mem != NULL);
    cl_kernel k = clCreateKernel(p, "bytes", &err);
    CHECK_ERR(set_arg_ptr(k, 0, mem), CL_SUCCESS);
    CHECK_ERR(clEnqueueNDRangeKernel(queue, k, 1, NULL, &g, NULL, 0, NULL, NULL), CL_SUCCESS);
    CHECK_ERR(clFinish(queue), CL_SUCCESS);
    int ok = 1;
    for (int i = 0; i < N; i++) ok &= ((cl_uchar *)mem)[i] == (cl_uchar)(i * 3);
    CHECK(ok);
    clReleaseKernel(k);
    k = clCreateKernel(p, "defined", &err);
    CHECK_ERR(set_arg_ptr(k, 0, mem), CL_SUCCESS);
    size_t one = 1;
    CHECK_ERR(clEnqueueNDRangeKernel(queue, k, 1, NULL, &one, NULL, 0, NULL, NULL), CL_SUCCESS);
    CHECK_ERR(clFinish(queue), CL_SUCCESS);
    cl_bool images = 0;
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_IMAGE_SUPPORT, sizeof images, &images, NULL), CL_SUCCESS);
    for (int i = 0; i < NL; i++) {
        int defined = ((cl_uint *)mem)[i] == 1;
        int backed = images || strcmp(language[i], "cl_khr_3d_image_writes") != 0;
        if (defined && backed && !has_word(extensions, language[i]))
            printf("    the compiler defines %s, and the device does not report it\n", language[i]);
        CHECK(!(defined && backed) || has_word(extensions, language[i]));
    }
    clReleaseKernel(k);
    if (writes3d) {
        /* cl_khr_3d_image_writes: a kernel writes a 3D image in place. */
        cl_image_format f = {CL_RGBA, CL_UNSIGNED_INT8};
        cl_image_desc desc = {0};
        desc.image_type = CL_MEM_OBJECT_IMAGE3D;
        desc.image_width = 8, desc.image_height = 4, desc.image_depth = 3;
        cl_mem img = clCreateImage(ctx, CL_MEM_READ_WRITE, &f, &desc, NULL, &err);
        CHECK_ERR(err, CL_SUCCESS);
        k = clCreateKernel(p, "write3d", &err);
        CHECK_ERR(clSetKernelArg(k, 0, sizeof img, &img), CL_SUCCESS);
        size_t box[3] = {8, 4, 3}, origin[3] = {0, 0, 0};
        CHECK_ERR(clEnqueueNDRangeKernel(queue, k, 3, NULL, box, NULL, 0, NULL, NULL), CL_SUCCESS);
        cl_uchar px[8 * 4 * 3 * 4];
        CHECK_ERR(clEnqueueReadImage(queue, img, CL_TRUE, origin, box, 0, 0, px, 0, NULL, NULL), CL_SUCCESS);
        ok = 1;
        for (int i = 0; i < 8 * 4 * 3; i++) {
            const cl_uchar *c = px + 4 * i;
            ok &= c[0] == i % 8 && c[1] == i / 8 % 4 && c[2] == i / 32 && c[3] == 7;
        }
        CHECK(ok);
        clReleaseKernel(k);
        clReleaseMemObject(img);
    }
    if (int64_atomics) {
        k = clCreateKernel(p, "count", &err);
        *(cl_long *)mem = 5;
        CHECK_ERR(set_arg_ptr(k, 0, mem), CL_SUCCESS);
        CHECK_ERR(clEnqueueNDRangeKernel(queue, k, 1, NULL, &g, NULL, 0, NULL, NULL), CL_SUCCESS);
        CHECK_ERR(clFinish(queue), CL_SUCCESS);
        CHECK(*(cl_long *)mem == 5 + ((cl_long)N << 32));
        clReleaseKernel(k);
    }
    if (fp64) {
        k = clCreateKernel(p, "root", &err);
        CHECK_ERR(set_arg_ptr(k, 0, mem), CL_SUCCESS);
        CHECK_ERR(clEnqueueNDRangeKernel(queue, k, 1, NULL, &g, NULL, 0, NULL, NULL), CL_SUCCESS);
        CHECK_ERR(clFinish(queue), CL_SUCCESS);
        const cl_double *d = mem;
        /* sqrt is correctly rounded in double (OpenCL C: 0 ulp). */
        CHECK(d[4] == 2.0 && d[2] * d[2] > 1.9999999999 && d[2] * d[2] < 2.0000000001);
        clReleaseKernel(k);
    }
    mem_free(ctx, mem);
    clReleaseProgram(p);
}

static const char *FILL = "kernel void fill(global uint *p, uint v, local uint *tmp) {\n"
                          "    tmp[get_local_id(0)] = v; barrier(CLK_LOCAL_MEM_FENCE);\n"
                          "    p[get_global_id(0)] = tmp[get_local_id(0)] + (uint)get_global_id(0);\n"
                          "}\n";

/* The one binary of a program (of the CPU device), malloc'ed; NULL and
 * *size 0 when it has none. */
static unsigned char *binary_of(cl_program p, size_t *size) {
    *size = 0;
    CHECK_ERR(clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof *size, size, NULL), CL_SUCCESS);
    if (*size == 0) return NULL;
    unsigned char *bin = malloc(*size);
    CHECK_ERR(clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL), CL_SUCCESS);
    return bin;
}

/* fill(p, v) with a __local argument through kernel `k` of p, checked. */
static void run_fill(cl_program p, cl_uint v) {
    cl_int err = 1;
    cl_kernel k = clCreateKernel(p, "fill", &err);
    CHECK_ERR(err, CL_SUCCESS);
    if (!k) return;
    /* The argument information survived the binary: the __local argument
     * is told apart (the bridge needs it to pass a size, not a pointer). */
    cl_kernel_arg_address_qualifier aq = 0;
    CHECK_ERR(clGetKernelArgInfo(k, 2, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof aq, &aq, NULL), CL_SUCCESS);
    CHECK(aq == CL_KERNEL_ARG_ADDRESS_LOCAL);
    enum { N = 64 };
    cl_uint *mem = host_alloc(ctx, NULL, N * sizeof(cl_uint), 0, &err);
    CHECK_ERR(set_arg_ptr(k, 0, mem), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(k, 1, sizeof v, &v), CL_SUCCESS);
    CHECK_ERR(clSetKernelArg(k, 2, 16 * sizeof(cl_uint), NULL), CL_SUCCESS);
    size_t g = N, l = 16;
    CHECK_ERR(clEnqueueNDRangeKernel(queue, k, 1, NULL, &g, &l, 0, NULL, NULL), CL_SUCCESS);
    CHECK_ERR(clFinish(queue), CL_SUCCESS);
    int ok = mem != NULL;
    for (cl_uint i = 0; ok && i < N; i++) ok &= mem[i] == v + i;
    CHECK(ok);
    if (mem) mem_free(ctx, mem);
    clReleaseKernel(k);
}

static void test_executable_binary_round_trip(void) {
    cl_int err = 1;
    cl_program src = clCreateProgramWithSource(ctx, 1, &FILL, NULL, &err);
    size_t size = 1;
    /* Nothing built: no binary. */
    CHECK_ERR(clGetProgramInfo(src, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL), CL_SUCCESS);
    CHECK(size == 0);
    CHECK_ERR(clBuildProgram(src, 1, &device, NULL, NULL, NULL), CL_SUCCESS);
    unsigned char *bin = binary_of(src, &size);
    CHECK(bin != NULL && size > 0);
    if (!bin) {
        clReleaseProgram(src);
        return;
    }
    /* The size rule of CL_PROGRAM_BINARIES, and a NULL entry is skipped. */
    unsigned char *none = NULL;
    size_t ret = 0;
    CHECK_ERR(clGetProgramInfo(src, CL_PROGRAM_BINARIES, sizeof none - 1, &none, NULL), CL_INVALID_VALUE);
    CHECK_ERR(clGetProgramInfo(src, CL_PROGRAM_BINARIES, sizeof none, &none, &ret), CL_SUCCESS);
    CHECK(ret == sizeof none);
    const unsigned char *in = bin;
    cl_int st = 1;
    cl_program p = clCreateProgramWithBinary(ctx, 1, &device, &size, &in, &st, &err);
    CHECK_ERR(err, CL_SUCCESS);
    CHECK_ERR(st, CL_SUCCESS);
    if (p) {
        cl_program_binary_type bt = 0;
        CHECK_ERR(clGetProgramBuildInfo(p, device, CL_PROGRAM_BINARY_TYPE, sizeof bt, &bt, NULL), CL_SUCCESS);
        CHECK(bt == CL_PROGRAM_BINARY_TYPE_EXECUTABLE);
        cl_build_status bs = 1;
        CHECK_ERR(clGetProgramBuildInfo(p, device, CL_PROGRAM_BUILD_STATUS, sizeof bs, &bs, NULL), CL_SUCCESS);
        CHECK(bs == CL_BUILD_NONE);
        char text[8] = "x";
        CHECK_ERR(clGetProgramInfo(p, CL_PROGRAM_SOURCE, sizeof text, text, NULL), CL_SUCCESS);
        CHECK(text[0] == 0);
        /* Not built yet: no kernel; no source to compile. */
        CHECK(clCreateKernel(p, "fill", &err) == NULL && err == CL_INVALID_PROGRAM_EXECUTABLE);
        CHECK_ERR(clCompileProgram(p, 0, NULL, NULL, 0, NULL, NULL, NULL, NULL), CL_INVALID_OPERATION);
        CHECK_ERR(clBuildProgram(p, 0, NULL, NULL, NULL, NULL), CL_SUCCESS);
        CHECK_ERR(clGetProgramBuildInfo(p, device, CL_PROGRAM_BUILD_STATUS, sizeof bs, &bs, NULL), CL_SUCCESS);
        CHECK(bs == CL_BUILD_SUCCESS);
        size_t again = 0;
        CHECK_ERR(clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof again, &again, NULL), CL_SUCCESS);
        CHECK(again > 0);
        run_fill(p, 1000);
        clReleaseProgram(p);
    }
    free(bin);
    clReleaseProgram(src);
}

static void test_compiled_object_binary_links(void) {
    cl_int err = 1;
    cl_program src = clCreateProgramWithSource(ctx, 1, &FILL, NULL, &err);
    CHECK_ERR(clCompileProgram(src, 1, &device, NULL, 0, NULL, NULL, NULL, NULL), CL_SUCCESS);
    size_t size = 0;
    unsigned char *bin = binary_of(src, &size);
    CHECK(bin != NULL);
    if (!bin) {
        clReleaseProgram(src);
        return;
    }
    const unsigned char *in = bin;
    cl_program obj = clCreateProgramWithBinary(ctx, 1, &device, &size, &in, NULL, &err);
    CHECK_ERR(err, CL_SUCCESS);
    cl_program_binary_type bt = 0;
    CHECK_ERR(clGetProgramBuildInfo(obj, device, CL_PROGRAM_BINARY_TYPE, sizeof bt, &bt, NULL), CL_SUCCESS);
    CHECK(bt == CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT);
    cl_program exe = clLinkProgram(ctx, 1, &device, NULL, 1, &obj, NULL, NULL, &err);
    CHECK_ERR(err, CL_SUCCESS);
    if (exe) {
        run_fill(exe, 7);
        clReleaseProgram(exe);
    }
    clReleaseProgram(obj);
    free(bin);
    clReleaseProgram(src);
}

static void test_invalid_binaries_and_no_il(void) {
    cl_int err = 1, st = 1;
    unsigned char junk[256];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (unsigned char)(i * 7 + 1);
    const unsigned char *in = junk;
    size_t size = sizeof junk;
    CHECK(clCreateProgramWithBinary(ctx, 1, &device, &size, &in, &st, &err) == NULL);
    CHECK_ERR(err, CL_INVALID_BINARY);
    CHECK_ERR(st, CL_INVALID_BINARY);
    /* A binary cut short (PoCL 3.1 itself aborts the process on one: the
     * bridge must not hand it over), cut inside its header, or damaged. */
    cl_program src = clCreateProgramWithSource(ctx, 1, &FILL, NULL, &err);
    CHECK_ERR(clBuildProgram(src, 1, &device, NULL, NULL, NULL), CL_SUCCESS);
    unsigned char *bin = binary_of(src, &size);
    if (bin) {
        in = bin;
        size_t cut[3] = {size - 1, size / 2, 16};
        for (int i = 0; i < 3; i++) {
            st = 1;
            CHECK(clCreateProgramWithBinary(ctx, 1, &device, &cut[i], &in, &st, &err) == NULL);
            CHECK_ERR(err, CL_INVALID_BINARY);
            CHECK_ERR(st, CL_INVALID_BINARY);
        }
        bin[size / 2] ^= 0x10;
        CHECK(clCreateProgramWithBinary(ctx, 1, &device, &size, &in, NULL, &err) == NULL);
        CHECK_ERR(err, CL_INVALID_BINARY);
        free(bin);
    }
    clReleaseProgram(src);
    /* PoCL 3.1 takes no IL (its CL_DEVICE_IL_VERSION is empty), so neither
     * does the device: OpenCL 3.0's CL_INVALID_OPERATION when no device of
     * the context supports IL. */
    char il[64] = "x";
    CHECK_ERR(clGetDeviceInfo(device, CL_DEVICE_IL_VERSION, sizeof il, il, NULL), CL_SUCCESS);
    CHECK(il[0] == 0);
    static const unsigned int spirv[5] = {0x07230203, 0x00010000, 0, 1, 0};
    CHECK(clCreateProgramWithIL(ctx, spirv, sizeof spirv, &err) == NULL && err == CL_INVALID_OPERATION);
    CHECK(clCreateProgramWithIL(NULL, spirv, sizeof spirv, &err) == NULL && err == CL_INVALID_CONTEXT);
}

static const struct test_case tests[] = {
    {"pocl_programs::extensions_are_the_compilers_and_dmabridges", test_extensions_are_the_compilers_and_dmabridges},
    {"pocl_programs::what_is_reported_is_there", test_what_is_reported_is_there},
    {"pocl_programs::executable_binary_round_trip", test_executable_binary_round_trip},
    {"pocl_programs::compiled_object_binary_links", test_compiled_object_binary_links},
    {"pocl_programs::invalid_binaries_and_no_il", test_invalid_binaries_and_no_il},
};

int main(int argc, char **argv) {
    /* Nothing here needs a device: the guests skip the lot without loading
     * PoCL (seconds under TCG). */
    if (devices_only(argc, argv)) {
        IGNORE_TESTS(tests, "--devices-only: it runs on the host (tests/icd/run)");
        return finish_tests();
    }
    open_cpu_device(&platform, &device, &ctx, &queue);
    if (queue) {
        host_alloc = EXT_FN(platform, clHostMemAllocINTEL);
        mem_free = EXT_FN(platform, clMemFreeINTEL);
        set_arg_ptr = EXT_FN(platform, clSetKernelArgMemPointerINTEL);
    }
    const char *why = no_pocl_here(device);
    if (why) {
        IGNORE_TESTS(tests, why);
    } else {
        int ready = queue && host_alloc && mem_free && set_arg_ptr;
        if (ready) {
            size_t size = 0;
            ready &= clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, sizeof extensions, extensions, NULL) == CL_SUCCESS;
            ready &= clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS_WITH_VERSION, sizeof ext_versions, ext_versions,
                                     &size) == CL_SUCCESS;
            n_ext_versions = size / sizeof ext_versions[0];
            ready &= clGetDeviceInfo(device, CL_DEVICE_OPENCL_C_FEATURES, sizeof features, features, &size) ==
                     CL_SUCCESS;
            n_features = size / sizeof features[0];
        }
        RUN_TESTS(tests, ready);
    }
    close_cpu_device(ctx, queue);
    return finish_tests();
}
