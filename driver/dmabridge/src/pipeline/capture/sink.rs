//! An output queue showing a capture stream's frames, the same dma-bufs,
//! and the capture -> output loopback step.

use std::os::fd::AsFd;
use std::time::Duration;

use rustix::io::Errno;

use super::stream::Stream;
use super::{on, PipelineError};
use crate::sys::v4l2::{BufType, Dequeued, Memory, PixFormat, VideoDevice};

/// An output queue that shows another stream's frames: the same dma-bufs
/// queued to the output device (`V4L2_MEMORY_DMABUF`), so a captured frame
/// reaches the output with no copy. Slot `i` of the sink carries frame `i`
/// of the source. A frame the sink shows goes back to the source's queue
/// only after [`Sink::take_back`] returned it: queued earlier, the capture
/// would overwrite it while the output reads it.
pub struct Sink {
    dev: VideoDevice,
    format: PixFormat,
    showing: Vec<bool>,
    streaming: bool,
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sink").field("device", &self.dev.path()).field("format", &self.format).finish_non_exhaustive()
    }
}

impl Sink {
    /// An output queue on `dev` for the frames of `source` (same format;
    /// `fps` frames per second if given and the output has a rate of its
    /// own: an HDMI output runs at its DV timings'), one slot per frame.
    ///
    /// ```no_run
    /// use dmabridge::pipeline::capture::*;
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let capture = find_capture_device(None)?;
    /// let output = find_output_beside(&capture)?;
    /// let stream = Stream::capture(&ctx, capture, &StreamConfig::default())?;
    /// let sink = Sink::new(output, &stream, None)?;
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn new(dev: VideoDevice, source: &Stream, fps: Option<u32>) -> Result<Sink, PipelineError> {
        if !dev.capability().outputs() {
            return Err(PipelineError::WrongKind {
                path: dev.path().to_owned(),
                what: "output",
                caps: dev.capability().device_caps,
            });
        }
        let f = source.format;
        let format = dev.set_format(BufType::Output, f.width, f.height, f.fourcc).map_err(on(&dev))?;
        if (format.width, format.height, format.fourcc, format.size_image)
            != (f.width, f.height, f.fourcc, f.size_image)
        {
            return Err(PipelineError::FormatRefused {
                path: dev.path().to_owned(),
                asked: format!("{}x{} {}", f.width, f.height, f.fourcc),
                got: format!("{}x{} {} of {} bytes", format.width, format.height, format.fourcc, format.size_image),
            });
        }
        if let Some(fps) = fps {
            match dev.set_frame_rate(BufType::Output, fps) {
                // An HDMI output's rate is its DV timings'.
                Err(e) if e.errno == Errno::NOTTY => {}
                r => r.map(drop).map_err(on(&dev))?,
            }
        }
        let n = source.frames.len() as u32;
        let granted = dev.request_buffers(BufType::Output, Memory::DmaBuf, n).map_err(on(&dev))?;
        if granted < n {
            return Err(PipelineError::Unsupported(format!(
                "{} grants {granted} output buffers, the source has {n} frames",
                dev.path().display()
            )));
        }
        Ok(Sink { dev, format, showing: vec![false; granted as usize], streaming: false })
    }

    /// Queues frame `index` of `source` (dequeued from it: the
    /// application's) for output; streaming starts with the first frame.
    ///
    /// The output starts half a frame period of `source` after
    /// [`Stream::dequeue`] handed that first frame back (this call sleeps
    /// until then, half a second at most), so that the two devices' frame
    /// ticks fall half a period apart. Why: vivid runs its capture and output ticks under one
    /// device lock; started at once they fall on the same jiffy, the output
    /// tick waits for the capture's fill, and it slips past its frame more
    /// often than the capture does — in a loopback every such extra slip
    /// costs a captured frame, for want of a buffer. Measured at 1280x720,
    /// 60 frames/s: ticks 1.2 ms apart, 11 output slips against 7 capture
    /// slips and 7 frames lost; 9 ms apart, about as many output as capture
    /// slips (5/5, 10/10, 5/6, 4/5) and none lost.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// # let capture = find_capture_device(None)?;
    /// # let output = find_output_beside(&capture)?;
    /// let mut stream = Stream::capture(&ctx, capture, &StreamConfig::default())?;
    /// let mut sink = Sink::new(output, &stream, None)?;
    /// stream.queue_all()?;
    /// stream.start()?;
    /// let frame = stream.dequeue(Duration::from_secs(5))?;
    /// sink.show(&stream, frame.index)?;
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn show(&mut self, source: &Stream, index: u32) -> Result<(), PipelineError> {
        let (Some(frame), Some(false)) = (source.frames.get(index as usize), self.showing.get(index as usize)) else {
            return Err(PipelineError::Unsupported(format!("frame {index} is not one the sink can take now")));
        };
        if source.is_queued(index) {
            return Err(PipelineError::Unsupported(format!("frame {index} is queued for capture")));
        }
        let len = u32::try_from(frame.len).unwrap_or(u32::MAX);
        self.dev
            .queue_dmabuf(BufType::Output, index, frame.dmabuf.as_fd(), len, self.format.size_image)
            .map_err(on(&self.dev))?;
        self.showing[index as usize] = true;
        if !self.streaming {
            if let Ok((num, den)) = source.dev.frame_rate(source.ty) {
                if num > 0 && den > 0 {
                    // At most half a second: a source slower than 1 frame/s
                    // gains nothing from a longer wait.
                    let half = Duration::from_secs_f64((num as f64 / den as f64 / 2.0).min(0.5));
                    let since = source
                        .handed_back
                        .get(index as usize)
                        .copied()
                        .flatten()
                        .map_or(Duration::ZERO, |t| t.elapsed());
                    std::thread::sleep(half.saturating_sub(since));
                }
            }
            self.dev.stream_on(BufType::Output).map_err(on(&self.dev))?;
            self.streaming = true;
        }
        Ok(())
    }

    /// A frame the output device has consumed, waiting up to `timeout`
    /// (`Ok(None)` when none came back in time): its index in the source,
    /// to be queued there again.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// # let capture = find_capture_device(None)?;
    /// # let output = find_output_beside(&capture)?;
    /// # let mut stream = Stream::capture(&ctx, capture, &StreamConfig::default())?;
    /// let mut sink = Sink::new(output, &stream, None)?;
    /// while let Some(shown) = sink.take_back(Duration::ZERO)? {
    ///     stream.queue(shown.index)?;
    /// }
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn take_back(&mut self, timeout: Duration) -> Result<Option<Dequeued>, PipelineError> {
        if !self.showing.contains(&true) {
            return Ok(None);
        }
        match self.dev.dequeue(BufType::Output, Memory::DmaBuf, timeout) {
            Ok(d) => {
                if let Some(s) = self.showing.get_mut(d.index as usize) {
                    *s = false;
                }
                Ok(Some(d))
            }
            Err(e) if e.errno == Errno::TIMEDOUT => Ok(None),
            Err(e) => Err(on(&self.dev)(e)),
        }
    }

    /// Shows frame `index` of `source` (just dequeued from it) on the
    /// output, and hands the frames the output has finished with back to
    /// `source`'s queue — the whole capture → output loopback step.
    ///
    /// It keeps at most [`Sink::DEPTH`] frames on the output, waiting up to
    /// `timeout` for it to give one back when it holds more, and also when
    /// it holds two or more while fewer than two frames are left to capture
    /// into ([`PipelineError::Stalled`] if it gives none). After an error
    /// every frame is still accounted for: queued for capture
    /// ([`Stream::is_queued`]), held by the output ([`Sink::is_showing`]),
    /// or the application's (neither), to queue again or show. Why: the output
    /// consumes a frame per tick of its own clock, at the rate the capture
    /// fills them. Frames the output holds beyond the one it shows and the
    /// next are latency it never works off; they are missing from the
    /// capture queue, and once that queue runs dry at a capture tick the
    /// driver drops the frame (a sequence gap). Measured on vivid at 60
    /// frames/s: left unbounded, the output settled at 4-5 of 6 frames,
    /// and the capture starved 3-7 times in 600 frames; bounded, none.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// # let capture = find_capture_device(None)?;
    /// # let output = find_output_beside(&capture)?;
    /// let mut stream = Stream::capture(&ctx, capture, &StreamConfig::default())?;
    /// let mut sink = Sink::new(output, &stream, None)?;
    /// stream.queue_all()?;
    /// stream.start()?;
    /// for _ in 0..10 {
    ///     let frame = stream.dequeue(Duration::from_secs(5))?;
    ///     sink.forward(&mut stream, frame.index, Duration::from_secs(5))?;
    ///     assert!(sink.showing() <= Sink::DEPTH);
    /// }
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn forward(&mut self, source: &mut Stream, index: u32, timeout: Duration) -> Result<(), PipelineError> {
        self.show(source, index)?;
        loop {
            // With fewer than two frames left to capture into, a frame the
            // output still holds is worth waiting for, too.
            let capturing = source.queued.iter().filter(|q| **q).count();
            let showing = self.showing();
            let wait = showing > Sink::DEPTH || (capturing < 2 && showing >= 2);
            match self.take_back(if wait { timeout } else { Duration::ZERO })? {
                Some(shown) => source.queue(shown.index)?,
                None if wait => {
                    return Err(PipelineError::Stalled { path: self.dev.path().to_owned(), waited: timeout })
                }
                None => return Ok(()),
            }
        }
    }

    /// How many frames [`Sink::forward`] lets the output hold: the one it
    /// shows and the next.
    pub const DEPTH: usize = 2;

    /// True while the output device holds frame `index` (shown, not yet
    /// taken back).
    ///
    /// ```no_run
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// # let capture = find_capture_device(None)?;
    /// # let output = find_output_beside(&capture)?;
    /// # let stream = Stream::capture(&ctx, capture, &StreamConfig::default())?;
    /// let sink = Sink::new(output, &stream, None)?;
    /// assert!(!sink.is_showing(0));
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn is_showing(&self, index: u32) -> bool {
        self.showing.get(index as usize).copied().unwrap_or(false)
    }

    /// How many frames the output device holds.
    ///
    /// ```no_run
    /// # use dmabridge::pipeline::capture::*;
    /// # use dmabridge::runtime::{context::Context, platform::Platform};
    /// # let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// # let capture = find_capture_device(None)?;
    /// # let output = find_output_beside(&capture)?;
    /// # let stream = Stream::capture(&ctx, capture, &StreamConfig::default())?;
    /// let sink = Sink::new(output, &stream, None)?;
    /// assert_eq!(sink.showing(), 0);
    /// # Ok::<(), PipelineError>(())
    /// ```
    pub fn showing(&self) -> usize {
        self.showing.iter().filter(|s| **s).count()
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        if self.streaming {
            if let Err(e) = self.dev.stream_off(BufType::Output) {
                log::warn!("{}: stopping the output: {e}", self.dev.path().display());
            }
        }
        if let Err(e) = self.dev.request_buffers(BufType::Output, Memory::DmaBuf, 0) {
            log::warn!("{}: freeing the output queue: {e}", self.dev.path().display());
        }
    }
}
