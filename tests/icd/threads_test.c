/* C tests of the dmabridge ICD from several threads at once, through the
 * real loader (-lOpenCL, OCL_ICD_VENDORS=<dmabridge.icd>), on the CPU
 * device: every entry point is thread-safe, and a handle that another
 * thread releases is answered with its CL_INVALID_* code (or, once the
 * address is a live object of that kind again, as that object), never a
 * crash. Closing lines (check.h): "N passed, N failed". */
#define _POSIX_C_SOURCE 200809L /* nanosleep, sched_yield */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"

enum { THREADS = 4, ROUNDS = 50, SIZE = 4096 };

static cl_platform_id platform;
static cl_device_id device;
static cl_context shared_ctx;
static cl_command_queue shared_queue;
static clHostMemAllocINTEL_fn host_alloc;
static clSharedMemAllocINTEL_fn shared_alloc;
static clEnqueueMemFillINTEL_fn mem_fill;
static clEnqueueMemcpyINTEL_fn mem_copy;
static clMemBlockingFreeINTEL_fn blocking_free;
static clMemFreeINTEL_fn mem_free;
static atomic_int thread_failures;
static atomic_int callbacks;

static void setup(void) {
    platform = dmabridge_platform();
    if (!platform || clGetDeviceIDs(platform, CL_DEVICE_TYPE_CPU, 1, &device, NULL) != CL_SUCCESS) return;
    cl_int err;
    shared_ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, 0};
    shared_queue = clCreateCommandQueueWithProperties(shared_ctx, device, props, &err);
    host_alloc = EXT_FN(platform, clHostMemAllocINTEL);
    shared_alloc = EXT_FN(platform, clSharedMemAllocINTEL);
    mem_fill = EXT_FN(platform, clEnqueueMemFillINTEL);
    mem_copy = EXT_FN(platform, clEnqueueMemcpyINTEL);
    blocking_free = EXT_FN(platform, clMemBlockingFreeINTEL);
    mem_free = EXT_FN(platform, clMemFreeINTEL);
}

/* A failed check inside a thread: counted, and said where. */
#define T_CHECK(cond)                                                                \
    do {                                                                             \
        if (!(cond)) {                                                               \
            printf("    thread check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            atomic_fetch_add(&thread_failures, 1);                                   \
        }                                                                            \
    } while (0)

static void CL_CALLBACK on_complete(cl_event ev, cl_int status, void *user) {
    (void)ev;
    (void)user;
    if (status == CL_COMPLETE) atomic_fetch_add(&callbacks, 1);
}

/* Each round: its own context and queue, and commands on the shared queue,
 * with USM, buffers, user events and callbacks. */
static void *worker(void *arg) {
    uintptr_t id = (uintptr_t)arg;
    for (int r = 0; r < ROUNDS; r++) {
        cl_int err = CL_SUCCESS;
        cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
        T_CHECK(ctx != NULL && err == CL_SUCCESS);
        cl_command_queue q = clCreateCommandQueueWithProperties(ctx, device, NULL, &err);
        T_CHECK(q != NULL && err == CL_SUCCESS);
        if (!ctx || !q) return NULL;
        unsigned char *a = host_alloc(ctx, NULL, SIZE, 0, &err);
        unsigned char *b = shared_alloc(ctx, device, NULL, SIZE, 0, &err);
        T_CHECK(a && b);
        if (a && b) {
            unsigned char pattern = (unsigned char)(id * 16 + r);
            T_CHECK(mem_fill(q, a, &pattern, 1, SIZE, 0, NULL, NULL) == CL_SUCCESS);
            T_CHECK(mem_copy(q, CL_TRUE, b, a, SIZE, 0, NULL, NULL) == CL_SUCCESS);
            T_CHECK(b[0] == pattern && b[SIZE - 1] == pattern);
        }
        /* A buffer on the shared queue, gated on a user event of that context. */
        cl_event gate = clCreateUserEvent(shared_ctx, &err);
        cl_mem buf = clCreateBuffer(shared_ctx, CL_MEM_READ_WRITE, 256, NULL, &err);
        T_CHECK(gate && buf);
        cl_uint word = (cl_uint)(id << 16 | (cl_uint)r), back[64] = {0};
        cl_event filled = NULL;
        T_CHECK(clEnqueueFillBuffer(shared_queue, buf, &word, sizeof word, 0, 256, 1, &gate, &filled) == CL_SUCCESS);
        T_CHECK(clSetEventCallback(filled, CL_COMPLETE, on_complete, NULL) == CL_SUCCESS);
        T_CHECK(clSetUserEventStatus(gate, CL_COMPLETE) == CL_SUCCESS);
        T_CHECK(clEnqueueReadBuffer(shared_queue, buf, CL_TRUE, 0, sizeof back, back, 1, &filled, NULL) == CL_SUCCESS);
        T_CHECK(back[0] == word && back[63] == word);
        T_CHECK(clRetainMemObject(buf) == CL_SUCCESS);
        T_CHECK(clReleaseMemObject(buf) == CL_SUCCESS);
        T_CHECK(clReleaseMemObject(buf) == CL_SUCCESS);
        T_CHECK(clReleaseEvent(filled) == CL_SUCCESS);
        T_CHECK(clReleaseEvent(gate) == CL_SUCCESS);
        if (a) T_CHECK(blocking_free(ctx, a) == CL_SUCCESS);
        if (b) T_CHECK(blocking_free(ctx, b) == CL_SUCCESS);
        T_CHECK(clReleaseCommandQueue(q) == CL_SUCCESS);
        T_CHECK(clReleaseContext(ctx) == CL_SUCCESS);
    }
    return NULL;
}

static void test_threads_share_a_context_and_make_their_own(void) {
    pthread_t t[THREADS];
    atomic_store(&thread_failures, 0);
    atomic_store(&callbacks, 0);
    int started = 0;
    for (uintptr_t i = 0; i < THREADS; i++) started += pthread_create(&t[i], NULL, worker, (void *)i) == 0;
    CHECK(started == THREADS);
    for (int i = 0; i < started; i++) pthread_join(t[i], NULL);
    CHECK(atomic_load(&thread_failures) == 0);
    CHECK_ERR(clFinish(shared_queue), CL_SUCCESS);
    /* A callback may run after the command it reports on is seen complete
     * (OpenCL lets the implementation call it from any thread, later): give
     * the last ones time to arrive (up to 10 s; a liveness bound, not a
     * speed target), then count them exactly. */
    for (int i = 0; i < 10000 && atomic_load(&callbacks) < started * ROUNDS; i++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    CHECK(atomic_load(&callbacks) == started * ROUNDS);
}

/* One thread makes and releases user events; others ask about the handles
 * it released. Each answer is CL_INVALID_EVENT or, where the address holds a
 * new event again, CL_SUCCESS: never a crash or another code. */
static cl_event released[256];
static atomic_int released_count;
static atomic_int odd_answers;

static void *releaser(void *arg) {
    (void)arg;
    for (int i = 0; i < 256; i++) {
        cl_int err;
        cl_event e = clCreateUserEvent(shared_ctx, &err);
        if (!e) continue;
        clReleaseEvent(e);
        released[atomic_load(&released_count)] = e;
        atomic_fetch_add(&released_count, 1);
    }
    return NULL;
}

static void *asker(void *arg) {
    (void)arg;
    for (int round = 0; round < 20; round++) {
        int n = atomic_load(&released_count);
        for (int i = 0; i < n; i++) {
            cl_int status = 0;
            cl_int r = clGetEventInfo(released[i], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
            if (r != CL_INVALID_EVENT && r != CL_SUCCESS) atomic_fetch_add(&odd_answers, 1);
            r = clRetainEvent(released[i]);
            if (r == CL_SUCCESS) clReleaseEvent(released[i]); /* it was a live event again: give it back */
            else if (r != CL_INVALID_EVENT) atomic_fetch_add(&odd_answers, 1);
        }
    }
    return NULL;
}

static void test_released_handles_from_other_threads(void) {
    pthread_t rel, ask[2];
    atomic_store(&released_count, 0);
    atomic_store(&odd_answers, 0);
    pthread_create(&rel, NULL, releaser, NULL);
    pthread_create(&ask[0], NULL, asker, NULL);
    pthread_create(&ask[1], NULL, asker, NULL);
    pthread_join(rel, NULL);
    pthread_join(ask[0], NULL);
    pthread_join(ask[1], NULL);
    CHECK(atomic_load(&released_count) == 256);
    CHECK(atomic_load(&odd_answers) == 0);
    /* Every handle is released for good now. */
    cl_int status = 0;
    for (int i = 0; i < 256; i++)
        CHECK_ERR(clGetEventInfo(released[i], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL),
                  CL_INVALID_EVENT);
}

/* Threads allocate and free through a context while another thread
 * releases it: the hot USM/SVM entry points borrow the context without a
 * reference count, so its destruction must wait for the calls in flight.
 * Every answer is success or CL_INVALID_CONTEXT, the destructor callback
 * runs once, and nothing crashes. (Releasing a context that other threads
 * still use is an application bug; it must not be a crash.) */
static cl_context racing_ctx;
static atomic_int racing_calls;
static atomic_int racing_odd;
static atomic_int racing_destroyed;

static void CL_CALLBACK on_racing_destroyed(cl_context c, void *user) {
    (void)c;
    (void)user;
    atomic_fetch_add(&racing_destroyed, 1);
}

static void *racer(void *arg) {
    (void)arg;
    cl_context c = racing_ctx;
    for (int invalid = 0; invalid < 1000;) {
        cl_int err = CL_SUCCESS;
        void *p = host_alloc(c, NULL, SIZE, 0, &err);
        void *q = clSVMAlloc(c, CL_MEM_READ_WRITE, SIZE, 0);
        if (p) {
            cl_int r = mem_free(c, p);
            if (r != CL_SUCCESS && r != CL_INVALID_CONTEXT) atomic_fetch_add(&racing_odd, 1);
        } else if (err != CL_INVALID_CONTEXT) {
            atomic_fetch_add(&racing_odd, 1);
        }
        if (q) clSVMFree(c, q);
        if (err == CL_INVALID_CONTEXT) invalid++;
        atomic_fetch_add(&racing_calls, 1);
    }
    return NULL;
}

static void test_context_released_under_running_calls(void) {
    for (int round = 0; round < 20; round++) {
        cl_int err;
        racing_ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
        CHECK_ERR(err, CL_SUCCESS);
        if (!racing_ctx) return;
        atomic_store(&racing_destroyed, 0);
        CHECK_ERR(clSetContextDestructorCallback(racing_ctx, on_racing_destroyed, NULL), CL_SUCCESS);
        atomic_store(&racing_calls, 0);
        pthread_t t[2];
        pthread_create(&t[0], NULL, racer, NULL);
        pthread_create(&t[1], NULL, racer, NULL);
        while (atomic_load(&racing_calls) < 200) sched_yield();
        CHECK_ERR(clReleaseContext(racing_ctx), CL_SUCCESS);
        CHECK(atomic_load(&racing_destroyed) == 1);
        pthread_join(t[0], NULL);
        pthread_join(t[1], NULL);
        CHECK(atomic_load(&racing_destroyed) == 1);
    }
    CHECK(atomic_load(&racing_odd) == 0);
}

/* clMemBlockingFreeINTEL waits for the commands that use its pointer, which
 * run on a queue's thread; that thread may drop the context's last
 * reference meanwhile (here an event callback releases it, and the
 * callback's hold on its event goes after it). The free must still end:
 * it holds a counted reference for its call, not a borrow whose
 * destruction the queue's thread would wait for while the free waits for
 * that thread. (Releasing a context that another thread still uses is an
 * application bug; it must not be a hang.) */
static cl_context freeing_ctx;
static void *freeing_ptr;
static atomic_int freeing_done;
static cl_int freeing_result;

static atomic_int gate_released;

/* Releases the context; the last reference goes when the callback's hold on
 * its event does, right after it returns, on the queue's thread (the user
 * event, which holds the context too, is released first). */
static void CL_CALLBACK release_context_from_callback(cl_event ev, cl_int status, void *user) {
    (void)ev;
    (void)status;
    clReleaseContext((cl_context)user);
    struct timespec tick = {0, 1000000};
    for (int i = 0; i < 2000 && !atomic_load(&gate_released); i++) nanosleep(&tick, NULL);
}

static void *blocking_freer(void *arg) {
    (void)arg;
    freeing_result = blocking_free(freeing_ctx, freeing_ptr);
    atomic_store(&freeing_done, 1);
    return NULL;
}

static void test_blocking_free_while_a_callback_releases_the_context(void) {
    static char src[SIZE], other[SIZE];
    cl_int err;
    freeing_ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK_ERR(err, CL_SUCCESS);
    cl_command_queue q = clCreateCommandQueueWithProperties(freeing_ctx, device, NULL, &err);
    CHECK_ERR(err, CL_SUCCESS);
    freeing_ptr = host_alloc(freeing_ctx, NULL, SIZE, 0, &err);
    cl_event gate = clCreateUserEvent(freeing_ctx, &err);
    CHECK(q && freeing_ptr && gate);
    if (!q || !freeing_ptr || !gate) return;
    /* In order: a copy held back by the gate, whose completion callback
     * releases the context, then a copy into the pointer to free. */
    cl_event first;
    CHECK_ERR(mem_copy(q, CL_FALSE, other, src, SIZE, 1, &gate, &first), CL_SUCCESS);
    CHECK_ERR(clSetEventCallback(first, CL_COMPLETE, release_context_from_callback, freeing_ctx), CL_SUCCESS);
    CHECK_ERR(mem_copy(q, CL_FALSE, freeing_ptr, src, SIZE, 0, NULL, NULL), CL_SUCCESS);
    clReleaseEvent(first);
    clReleaseCommandQueue(q);
    atomic_store(&freeing_done, 0);
    atomic_store(&gate_released, 0);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, blocking_freer, NULL) == 0);
    struct timespec tick = {0, 1000000};
    for (int i = 0; i < 100; i++) nanosleep(&tick, NULL); /* the free is waiting */
    CHECK_ERR(clSetUserEventStatus(gate, CL_COMPLETE), CL_SUCCESS);
    CHECK_ERR(clReleaseEvent(gate), CL_SUCCESS);
    atomic_store(&gate_released, 1);
    for (int i = 0; i < 10000 && !atomic_load(&freeing_done); i++) nanosleep(&tick, NULL);
    if (!atomic_load(&freeing_done)) {
        printf("    clMemBlockingFreeINTEL still waits after 10 s (for the queue's thread, which waits for it?)\n");
        CHECK(0);
        return; /* the thread stays blocked: leave it */
    }
    pthread_join(t, NULL);
    CHECK_ERR(freeing_result, CL_SUCCESS);
}

int main(void) {
    setup();
    static const struct test_case tests[] = {
        {"threads::share_a_context_and_make_their_own", test_threads_share_a_context_and_make_their_own},
        {"threads::released_handles_from_other_threads", test_released_handles_from_other_threads},
        {"threads::context_released_under_running_calls", test_context_released_under_running_calls},
        {"threads::blocking_free_while_a_callback_releases_the_context",
         test_blocking_free_while_a_callback_releases_the_context},
    };
    int ready = platform && device && shared_ctx && shared_queue && host_alloc && shared_alloc && mem_fill && mem_copy &&
                blocking_free && mem_free;
    RUN_TESTS(tests, ready);
    close_cpu_device(shared_ctx, shared_queue);
    return finish_tests();
}
