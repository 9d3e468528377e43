/* YUYV (BT.601, limited range) to RGBA in OpenCL C, byte for byte the CPU
 * device's built-in yuyv_to_rgba_strided (driver/dmabridge/src/runtime/kernel:
 * yuv_to_rgb, 8-bit fixed point rounded, clamped to 0..255), with the same
 * arguments. One work-item per pair of pixels: global size
 * {ceil(width / 2), height}; an odd width's last pair gives one pixel.
 * The guest test pocl::yuyv_kernel_matches_builtin_on_vivid compares the two
 * on vivid's frames, and make bench times them on a 1080p frame. */
kernel void yuyv_to_rgba(global const uchar *src, global uchar *dst, uint width, uint height,
                         uint src_stride, uint dst_stride) {
    uint x = get_global_id(0), y = get_global_id(1);
    if (2 * x >= width || y >= height) return;
    uchar4 q = vload4(0, src + (size_t)y * src_stride + 4 * (size_t)x);
    int d = (int)q.y - 128, e = (int)q.w - 128;
    int cr = 409 * e + 128, cg = 128 - 100 * d - 208 * e, cb = 516 * d + 128;
    global uchar *o = dst + (size_t)y * dst_stride + 8 * (size_t)x;
    int c = 298 * ((int)q.x - 16);
    vstore4((uchar4)(convert_uchar_sat((c + cr) >> 8), convert_uchar_sat((c + cg) >> 8),
                     convert_uchar_sat((c + cb) >> 8), 255), 0, o);
    if (2 * x + 1 < width) {
        c = 298 * ((int)q.z - 16);
        vstore4((uchar4)(convert_uchar_sat((c + cr) >> 8), convert_uchar_sat((c + cg) >> 8),
                         convert_uchar_sat((c + cb) >> 8), 255), 1, o);
    }
}
