//! vivid as the guest tests use it. vivid's input and controls belong to
//! the loaded module, not to a process: they outlive each test of a guest
//! boot. So every test sets the picture it relies on itself, rather than
//! trusting the one before it to have put things back: a kernel test that
//! failed with the colour squares on once left a later test reading magenta
//! where it expected the 75% bars' white.

use dmabridge::pipeline::capture::find_capture_device;
use dmabridge::sys::v4l2::VideoDevice;

/// vivid's capture device on its webcam input, showing vivid's defaults:
/// the 75% colour bars with its text drawn over them (the loopback test
/// leaves the input on HDMI; the kernel tests change the pattern).
pub(crate) fn webcam() -> VideoDevice {
    webcam_with("75% Colorbar", "All")
}

/// vivid's capture device on its webcam input with the test pattern
/// `pattern` and the text mode `osd` ("None": each frame the same while the
/// pattern is static).
pub(crate) fn webcam_with(pattern: &str, osd: &str) -> VideoDevice {
    let dev = find_capture_device(None).expect("the guest suite loads vivid (--module vivid)");
    assert_eq!(dev.capability().driver, "vivid", "{}", dev.path().display());
    let webcam = dev.inputs().unwrap().into_iter().find(|i| i.name.starts_with("Webcam")).unwrap();
    dev.set_input(webcam.index).unwrap();
    set_menu(&dev, "Test Pattern", pattern);
    set_menu(&dev, "OSD Text Mode", osd);
    dev
}

/// Sets vivid's menu control `control` to its entry `item`.
fn set_menu(dev: &VideoDevice, control: &str, item: &str) {
    let c = dev.find_control(control).unwrap().unwrap_or_else(|| panic!("vivid has a {control:?} control"));
    let items = dev.menu_items(&c).unwrap();
    let (value, _) = items
        .iter()
        .find(|(_, name)| name == item)
        .unwrap_or_else(|| panic!("{control:?} has no entry {item:?}: {items:?}"));
    dev.set_control(c.id, *value as i32).unwrap();
}
