/* Frames from vivid (the kernel's virtual V4L2 capture device, loaded in
 * the QEMU guest by the rig's --module vivid) as dma-bufs: the driver's own
 * buffers (V4L2_MEMORY_MMAP), exported with VIDIOC_EXPBUF, so a test can
 * import them zero-copy. Header-only, for the C tests of tests/icd. */
#ifndef DMABRIDGE_TESTS_VIVID_H
#define DMABRIDGE_TESTS_VIVID_H
#include <errno.h>
#include <fcntl.h>
#include <linux/videodev2.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

enum { VIVID_BUFS = 2 };

struct vivid {
    int fd;                  /* the capture node */
    int dmabuf[VIVID_BUFS];  /* each buffer exported, -1 where not */
    unsigned width, height, stride, size;
};

static inline int vivid_ioctl(int fd, unsigned long req, void *arg) {
    int r;
    do r = ioctl(fd, req, arg);
    while (r < 0 && errno == EINTR);
    return r;
}

/* The first /dev/videoN that captures single-planar video and streams:
 * its open fd, or -1. */
static inline int vivid_open_capture(void) {
    for (int i = 0; i < 16; i++) {
        char path[32];
        snprintf(path, sizeof path, "/dev/video%d", i);
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0) continue;
        struct v4l2_capability cap;
        memset(&cap, 0, sizeof cap);
        unsigned want = V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_STREAMING;
        if (vivid_ioctl(fd, VIDIOC_QUERYCAP, &cap) == 0 && strcmp((char *)cap.driver, "vivid") == 0 &&
            ((cap.capabilities & V4L2_CAP_DEVICE_CAPS ? cap.device_caps : cap.capabilities) & want) == want)
            return fd;
        close(fd);
    }
    return -1;
}

/* Sets vivid's "Test Pattern" menu control to the entry named `name` (e.g.
 * "Noise", "75% Colorbar"), found by name: vivid's control ids and menu
 * order are its own. 0 on success, -1 with why printed. */
static inline int vivid_pattern(struct vivid *v, const char *name) {
    struct v4l2_queryctrl q;
    memset(&q, 0, sizeof q);
    q.id = V4L2_CTRL_FLAG_NEXT_CTRL;
    while (vivid_ioctl(v->fd, VIDIOC_QUERYCTRL, &q) == 0) {
        if (q.type == V4L2_CTRL_TYPE_MENU && strcmp((char *)q.name, "Test Pattern") == 0) {
            for (int i = q.minimum; i <= q.maximum; i++) {
                struct v4l2_querymenu m;
                memset(&m, 0, sizeof m);
                m.id = q.id;
                m.index = (unsigned)i;
                if (vivid_ioctl(v->fd, VIDIOC_QUERYMENU, &m) == 0 && strcmp((char *)m.name, name) == 0) {
                    struct v4l2_control c = {q.id, i};
                    if (vivid_ioctl(v->fd, VIDIOC_S_CTRL, &c) == 0) return 0;
                    printf("    vivid: setting Test Pattern to %s failed: %s\n", name, strerror(errno));
                    return -1;
                }
            }
            printf("    vivid: its Test Pattern menu has no entry \"%s\"\n", name);
            return -1;
        }
        q.id |= V4L2_CTRL_FLAG_NEXT_CTRL;
    }
    printf("    vivid: no \"Test Pattern\" control\n");
    return -1;
}

/* Opens vivid's capture node on its webcam input (input 0: a test pattern;
 * the HDMI input may have no signal) at width x height YUYV with the test
 * pattern named `pattern`, exports its VIVID_BUFS buffers and starts
 * streaming. 0 on success; on a
 * failure, -1 with the step that failed printed. */
static inline int vivid_start(struct vivid *v, unsigned width, unsigned height, const char *pattern) {
    memset(v, 0, sizeof *v);
    for (int i = 0; i < VIVID_BUFS; i++) v->dmabuf[i] = -1;
    v->fd = vivid_open_capture();
    if (v->fd < 0) {
        printf("    vivid: no capture node among /dev/video*\n");
        return -1;
    }
    int input = 0;
    struct v4l2_format f;
    memset(&f, 0, sizeof f);
    f.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    f.fmt.pix.width = width;
    f.fmt.pix.height = height;
    f.fmt.pix.pixelformat = V4L2_PIX_FMT_YUYV;
    f.fmt.pix.field = V4L2_FIELD_NONE;
    struct v4l2_streamparm parm;
    memset(&parm, 0, sizeof parm);
    parm.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    parm.parm.capture.timeperframe.numerator = 1;
    parm.parm.capture.timeperframe.denominator = 30; /* the default 5 fps is 200 ms a frame */
    struct v4l2_requestbuffers req;
    memset(&req, 0, sizeof req);
    req.count = VIVID_BUFS;
    req.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    req.memory = V4L2_MEMORY_MMAP;
    if (vivid_ioctl(v->fd, VIDIOC_S_INPUT, &input) < 0 || vivid_ioctl(v->fd, VIDIOC_S_FMT, &f) < 0 ||
        f.fmt.pix.pixelformat != V4L2_PIX_FMT_YUYV || vivid_ioctl(v->fd, VIDIOC_S_PARM, &parm) < 0 ||
        vivid_ioctl(v->fd, VIDIOC_REQBUFS, &req) < 0 || req.count < VIVID_BUFS) {
        printf("    vivid: setting input 0, %ux%u YUYV, 30 fps and %d MMAP buffers failed: %s\n", width, height,
               VIVID_BUFS, strerror(errno));
        return -1;
    }
    v->width = f.fmt.pix.width;
    v->height = f.fmt.pix.height;
    v->stride = f.fmt.pix.bytesperline;
    v->size = f.fmt.pix.sizeimage;
    for (int i = 0; i < VIVID_BUFS; i++) {
        struct v4l2_exportbuffer e;
        memset(&e, 0, sizeof e);
        e.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
        e.index = (unsigned)i;
        e.flags = O_RDWR | O_CLOEXEC;
        struct v4l2_buffer b;
        memset(&b, 0, sizeof b);
        b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
        b.memory = V4L2_MEMORY_MMAP;
        b.index = (unsigned)i;
        if (vivid_ioctl(v->fd, VIDIOC_EXPBUF, &e) < 0 || vivid_ioctl(v->fd, VIDIOC_QBUF, &b) < 0) {
            printf("    vivid: exporting or queueing buffer %d failed: %s\n", i, strerror(errno));
            return -1;
        }
        v->dmabuf[i] = e.fd;
    }
    int type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    if (vivid_pattern(v, pattern) != 0) return -1;
    if (vivid_ioctl(v->fd, VIDIOC_STREAMON, &type) < 0) {
        printf("    vivid: VIDIOC_STREAMON failed: %s\n", strerror(errno));
        return -1;
    }
    return 0;
}

/* The index of the next filled buffer (waits up to 5 s), or -1. */
static inline int vivid_dequeue(struct vivid *v) {
    struct pollfd p = {v->fd, POLLIN, 0};
    struct v4l2_buffer b;
    memset(&b, 0, sizeof b);
    b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    b.memory = V4L2_MEMORY_MMAP;
    if (poll(&p, 1, 5000) != 1 || vivid_ioctl(v->fd, VIDIOC_DQBUF, &b) < 0) {
        printf("    vivid: no frame within 5 s: %s\n", strerror(errno));
        return -1;
    }
    return (int)b.index;
}

/* Gives buffer i back to the driver. */
static inline int vivid_requeue(struct vivid *v, int i) {
    struct v4l2_buffer b;
    memset(&b, 0, sizeof b);
    b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    b.memory = V4L2_MEMORY_MMAP;
    b.index = (unsigned)i;
    return vivid_ioctl(v->fd, VIDIOC_QBUF, &b);
}

/* Stops streaming, closes the exports and the node. */
static inline void vivid_stop(struct vivid *v) {
    int type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    if (v->fd >= 0) vivid_ioctl(v->fd, VIDIOC_STREAMOFF, &type);
    for (int i = 0; i < VIVID_BUFS; i++)
        if (v->dmabuf[i] >= 0) close(v->dmabuf[i]);
    if (v->fd >= 0) close(v->fd);
    v->fd = -1;
}
#endif
