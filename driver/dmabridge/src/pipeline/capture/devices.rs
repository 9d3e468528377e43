//! Finding the V4L2 devices of a pipeline, and wiring vivid's HDMI output
//! to its HDMI input.

use std::path::Path;

use super::{on, PipelineError};
use crate::sys::v4l2::{DvTimings, Port, VideoDevice};
use crate::sys::OsError;

/// The device `path` names, or the first `/dev/video*` node that captures
/// video with streaming I/O; [`PipelineError::NoCaptureDevice`] if there
/// is none, [`PipelineError::WrongKind`] if `path` does not capture.
///
/// ```
/// use dmabridge::pipeline::capture::{find_capture_device, PipelineError};
/// match find_capture_device(None) {
///     Ok(dev) => println!("capturing from {}", dev.path().display()),
///     Err(e) => assert!(matches!(e, PipelineError::NoCaptureDevice | PipelineError::Device { .. })),
/// }
/// ```
pub fn find_capture_device(path: Option<&Path>) -> Result<VideoDevice, PipelineError> {
    if let Some(path) = path {
        let dev = VideoDevice::open(path).map_err(|error| PipelineError::Device { path: path.to_owned(), error })?;
        if !dev.capability().captures() {
            return Err(PipelineError::WrongKind {
                path: path.to_owned(),
                what: "capture",
                caps: dev.capability().device_caps,
            });
        }
        return Ok(dev);
    }
    VideoDevice::list()
        .iter()
        .filter_map(|p| VideoDevice::open(p).ok())
        .find(|d| d.capability().captures())
        .ok_or(PipelineError::NoCaptureDevice)
}

/// The first output node of the same device as `capture` (the same
/// `bus_info`, e.g. vivid's `vid-out` beside its `vid-cap`).
///
/// ```no_run
/// use dmabridge::pipeline::capture::{find_capture_device, find_output_beside};
/// let output = find_output_beside(&find_capture_device(None)?)?;
/// println!("{}", output.path().display());
/// # Ok::<(), dmabridge::pipeline::capture::PipelineError>(())
/// ```
pub fn find_output_beside(capture: &VideoDevice) -> Result<VideoDevice, PipelineError> {
    VideoDevice::list()
        .iter()
        .filter_map(|p| VideoDevice::open(p).ok())
        .find(|d| d.capability().outputs() && d.capability().bus_info == capture.capability().bus_info)
        .ok_or_else(|| PipelineError::NoOutputDevice(capture.path().to_owned()))
}

/// Connects `output`'s HDMI output to `capture`'s HDMI input, as vivid
/// offers it: selects the HDMI input and output, sets both to the DV
/// timings of `width`x`height` closest to `fps`, and sets the capture
/// device's `"<input> Is Connected To"` menu control to the item naming
/// the output, and its `"OSD Text Mode"` to `"None"` (no counters drawn
/// over the image). From then on the capture side returns exactly the
/// frames the output consumes. Returns the timings.
///
/// ```no_run
/// use dmabridge::pipeline::capture::{find_capture_device, find_output_beside, hdmi_loopback};
/// let capture = find_capture_device(None)?;
/// let output = find_output_beside(&capture)?;
/// let timings = hdmi_loopback(&capture, &output, 640, 480, 60.0)?;
/// println!("{:.2} frames/s", timings.fps());
/// # Ok::<(), dmabridge::pipeline::capture::PipelineError>(())
/// ```
pub fn hdmi_loopback(
    capture: &VideoDevice,
    output: &VideoDevice,
    width: u32,
    height: u32,
    fps: f64,
) -> Result<DvTimings, PipelineError> {
    let input = hdmi(capture, capture.inputs(), "input")?;
    capture.set_input(input.index).map_err(on(capture))?;
    let (out, timings) = hdmi_output(output, width, height, fps)?;
    capture.set_dv_timings(&timings).map_err(on(capture))?;
    let name = format!("{} Is Connected To", input.name);
    let control = capture.find_control(&name).map_err(on(capture))?.ok_or_else(|| {
        PipelineError::Unsupported(format!("{} has no control {name:?} (not vivid?)", capture.path().display()))
    })?;
    let item = capture
        .menu_items(&control)
        .map_err(on(capture))?
        .into_iter()
        .find(|(_, n)| n.ends_with(&out.name))
        .ok_or_else(|| {
            PipelineError::Unsupported(format!("control {name:?} offers no item naming output {:?}", out.name))
        })?;
    capture.set_control(control.id, item.0 as i32).map_err(on(capture))?;
    // vivid draws its counters over the captured image unless told not to.
    if let Some(osd) = capture.find_control("OSD Text Mode").map_err(on(capture))? {
        let items = capture.menu_items(&osd).map_err(on(capture))?;
        if let Some((none, _)) = items.iter().find(|(_, n)| n == "None") {
            capture.set_control(osd.id, *none as i32).map_err(on(capture))?;
        }
    }
    Ok(timings)
}

/// Selects `output`'s HDMI output and sets it to the DV timings of
/// `width`x`height` closest to `fps`; returns the output and the timings.
/// (An HDMI output takes any size its timings allow; an analog one only its
/// standard's.)
///
/// ```no_run
/// use dmabridge::pipeline::capture::{find_capture_device, find_output_beside, hdmi_output};
/// let output = find_output_beside(&find_capture_device(None)?)?;
/// let (port, timings) = hdmi_output(&output, 1280, 720, 60.0)?;
/// println!("{}: {:.2} frames/s", port.name, timings.fps());
/// # Ok::<(), dmabridge::pipeline::capture::PipelineError>(())
/// ```
pub fn hdmi_output(
    output: &VideoDevice,
    width: u32,
    height: u32,
    fps: f64,
) -> Result<(Port, DvTimings), PipelineError> {
    let out = hdmi(output, output.outputs(), "output")?;
    output.set_output(out.index).map_err(on(output))?;
    let timings = output
        .dv_timings_list()
        .map_err(on(output))?
        .into_iter()
        .filter(|t| (t.width(), t.height()) == (width, height))
        .min_by(|a, b| (a.fps() - fps).abs().total_cmp(&(b.fps() - fps).abs()))
        .ok_or_else(|| {
            PipelineError::Unsupported(format!("{} has no HDMI timings of {width}x{height}", output.path().display()))
        })?;
    output.set_dv_timings(&timings).map_err(on(output))?;
    Ok((out, timings))
}

/// The HDMI port (one with DV timings) among `ports` of `dev`.
fn hdmi(dev: &VideoDevice, ports: Result<Vec<Port>, OsError>, what: &str) -> Result<Port, PipelineError> {
    const DV_TIMINGS_CAP: u32 = 2;
    ports
        .map_err(on(dev))?
        .into_iter()
        .find(|p| p.name.starts_with("HDMI") && p.capabilities & DV_TIMINGS_CAP != 0)
        .ok_or_else(|| PipelineError::Unsupported(format!("{} has no HDMI {what}", dev.path().display())))
}
