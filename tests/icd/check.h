/* What every C test of tests/icd shares: the check macros, the test runner
 * and its closing lines, and finding the dmabridge platform among the
 * loader's platforms.
 *
 * A test is a void function that counts its failed checks; run_test prints
 * "test icd::NAME ... ok|FAILED", ignore_test "test icd::NAME ... ignored
 * (WHY)", and finish_tests the closing "N ignored" (when there are any) and
 * "N passed, N failed" lines that tests/icd/run adds up. Header-only, each
 * test file is one program. */
#ifndef DMABRIDGE_ICD_TEST_CHECK_H
#define DMABRIDGE_ICD_TEST_CHECK_H

#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failed_checks;
static int tests_passed, tests_failed, tests_ignored;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            printf("    check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond);    \
            failed_checks++;                                                         \
        }                                                                            \
    } while (0)
#define CHECK_ERR(expr, code)                                                        \
    do {                                                                             \
        cl_int got_ = (expr);                                                        \
        if (got_ != (code)) {                                                        \
            printf("    check failed at %s:%d: %s = %d, expected %d\n", __FILE__,    \
                   __LINE__, #expr, got_, (code));                                   \
            failed_checks++;                                                         \
        }                                                                            \
    } while (0)

/* Runs test f as icd::name; when the program's set-up did not succeed
 * (ready == 0) the test fails without running. */
static inline void run_test(const char *name, void (*f)(void), int ready) {
    int before = failed_checks;
    if (ready) f();
    else {
        printf("    set-up failed: no dmabridge platform or device (is OCL_ICD_VENDORS set?)\n");
        failed_checks++;
    }
    int ok = failed_checks == before;
    printf("test icd::%s ... %s\n", name, ok ? "ok" : "FAILED");
    ok ? tests_passed++ : tests_failed++;
    fflush(stdout);
}

/* Reports test name as not run here, and why. */
static inline void ignore_test(const char *name, const char *why) {
    printf("test icd::%s ... ignored (%s)\n", name, why);
    tests_ignored++;
    fflush(stdout);
}

/* The closing lines; the program's exit status. */
static inline int finish_tests(void) {
    if (tests_ignored) printf("%d ignored\n", tests_ignored);
    printf("%d passed, %d failed\n", tests_passed, tests_failed);
    return tests_failed != 0;
}

/* A named test of a program's table; run_tests runs a table in order. */
struct test_case {
    const char *name;
    void (*f)(void);
};
#define RUN_TESTS(table, ready) run_tests((table), sizeof(table) / sizeof((table)[0]), (ready))
static inline void run_tests(const struct test_case *tests, size_t n, int ready) {
    for (size_t i = 0; i < n; i++) run_test(tests[i].name, tests[i].f, ready);
}

/* Reports every test of a table as not run here, and why. */
#define IGNORE_TESTS(table, why) ignore_tests((table), sizeof(table) / sizeof((table)[0]), (why))
static inline void ignore_tests(const struct test_case *tests, size_t n, const char *why) {
    for (size_t i = 0; i < n; i++) ignore_test(tests[i].name, why);
}
/* tests/icd/run passes --devices-only in the QEMU guests. */
static inline int devices_only(int argc, char **argv) {
    return argc > 1 && strcmp(argv[1], "--devices-only") == 0;
}
/* Why the tests of kernels from source do not run (NULL: they run): the
 * device has no compiler (no PoCL) and DMABRIDGE_EXPECT_POCL is not 1
 * (tests/icd/run sets it where PoCL must be there: then they run and fail). */
static inline const char *no_pocl_here(cl_device_id device) {
    cl_bool comp = 0;
    if (device) clGetDeviceInfo(device, CL_DEVICE_COMPILER_AVAILABLE, sizeof comp, &comp, NULL);
    const char *expect = getenv("DMABRIDGE_EXPECT_POCL");
    return device && !comp && !(expect && strcmp(expect, "1") == 0) ? "no PoCL here" : NULL;
}
/* An extension entry point of the platform, as its typedef NAME_fn:
 * EXT_FN(platform, clHostMemAllocINTEL). NULL when the platform lacks it. */
#define EXT_FN(platform, name) ((name##_fn)clGetExtensionFunctionAddressForPlatform((platform), #name))

/* True if word is one of the space-separated words of list (an extension
 * string). */
static inline int has_word(const char *list, const char *word) {
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return 1;
    return 0;
}

/* The platform named "dmabridge", or NULL. */
static inline cl_platform_id dmabridge_platform(void) {
    cl_uint n = 0;
    cl_platform_id ps[16];
    if (clGetPlatformIDs(16, ps, &n) != CL_SUCCESS) return NULL;
    for (cl_uint i = 0; i < n && i < 16; i++) {
        char name[64] = {0};
        clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        if (strcmp(name, "dmabridge") == 0) return ps[i];
    }
    return NULL;
}

/* The set-up most programs share: the dmabridge platform and its CPU device,
 * then (where ctx and queue are not NULL) a context on it and a default
 * in-order queue. What could not be made stays NULL: the caller's "ready"
 * condition names what its tests need. */
static inline void open_cpu_device(cl_platform_id *platform, cl_device_id *device, cl_context *ctx,
                                   cl_command_queue *queue) {
    *platform = dmabridge_platform();
    if (!*platform || clGetDeviceIDs(*platform, CL_DEVICE_TYPE_CPU, 1, device, NULL) != CL_SUCCESS) {
        *device = NULL;
        return;
    }
    if (!ctx) return;
    cl_int err;
    *ctx = clCreateContext(NULL, 1, device, NULL, NULL, &err);
    if (queue && *ctx) *queue = clCreateCommandQueueWithProperties(*ctx, *device, NULL, &err);
}

/* Releases what open_cpu_device made (NULLs are skipped). */
static inline void close_cpu_device(cl_context ctx, cl_command_queue queue) {
    if (queue) clReleaseCommandQueue(queue);
    if (ctx) clReleaseContext(ctx);
}

#endif
