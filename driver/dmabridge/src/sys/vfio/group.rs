//! A VFIO group: the unit of IOMMU isolation, `/dev/vfio/N`.

use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use vfio_bindings::bindings::vfio as uapi;

use super::container::Container;
use super::device::Device;
use super::VfioError;
use crate::sys::ioctl::{ioctl_ptr, opcode, Opcode};
use crate::sys::pci::{PciAddress, PciFunction};
use crate::sys::OsError;

const VFIO_GROUP_GET_STATUS: Opcode = opcode::none(b';', 103);
const VFIO_GROUP_SET_CONTAINER: Opcode = opcode::none(b';', 104);
const VFIO_GROUP_GET_DEVICE_FD: Opcode = opcode::none(b';', 106);

/// An open, viable group attached to a container.
pub struct Group {
    fd: OwnedFd,
    number: u32,
    container: Arc<Container>,
    /// Held while a device of the group checks whether its function decodes
    /// memory and acts on the answer (maps a BAR, or makes a config write
    /// that leaves decoding off): see `Device::write_region`. One per group
    /// node, which a process can open only once, so one per function.
    pub(super) memory_decoding: Mutex<()>,
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group").field("number", &self.number).finish_non_exhaustive()
    }
}

impl Group {
    /// Opens the group of the function at `address` and attaches it to
    /// `container`; a group already attached there is reused. The function
    /// must exist, sit in an IOMMU group and be bound to vfio-pci.
    ///
    /// Reads sysfs, then `open(2)` of `/dev/vfio/N`, `VFIO_GROUP_GET_STATUS`,
    /// `VFIO_GROUP_SET_CONTAINER` and, for a container's first group, `VFIO_SET_IOMMU`.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::vfio::{Group, VfioError};
    /// use dmabridge::sys::pci::PciFunction;
    /// # use dmabridge::sys::vfio::Container;
    ///
    /// // A function bound to vfio-pci, where this machine has one.
    /// let Some(f) = PciFunction::all().into_iter().find(|f| f.is_vfio_bound()) else { return Ok(()) };
    /// # let Some(container) = dmabridge::sys::doc_support::or_skip(Container::open()) else { return Ok(()) };
    /// match Group::for_device(&container, f.address) {
    ///     Ok(group) => assert_eq!(Some(group.number()), f.iommu_group),
    ///     Err(e) => println!("{e}"),
    /// }
    /// // A function not bound to vfio-pci is refused with the reason.
    /// if let Some(other) = PciFunction::all().into_iter().find(|f| !f.is_vfio_bound() && f.iommu_group.is_some()) {
    ///     assert!(matches!(Group::for_device(&container, other.address), Err(VfioError::NotBoundToVfio { .. })));
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn for_device(container: &Arc<Container>, address: PciAddress) -> Result<Arc<Group>, VfioError> {
        let f = PciFunction::read(address).ok_or(VfioError::NoDevice(address))?;
        let number = f.iommu_group.ok_or(VfioError::NoIommuGroup(address))?;
        if !f.is_vfio_bound() {
            return Err(VfioError::NotBoundToVfio { address, driver: f.driver.unwrap_or_else(|| "no driver".into()) });
        }
        if let Some(g) = container.cached_group(number) {
            // A group whose devices were all removed is dead for good; a
            // function back at the address (rescan, rebind) is in a new group,
            // possibly under the same number.
            if g.alive() {
                return Ok(g);
            }
        }
        let path = format!("/dev/vfio/{number}");
        let fd =
            rustix::fs::open(path.as_str(), OFlags::RDWR | OFlags::CLOEXEC, Mode::empty()).map_err(|e| match e {
                Errno::NOENT => VfioError::NotBoundToVfio { address, driver: "vfio-pci (but no group node)".into() },
                Errno::BUSY => VfioError::GroupBusy(number),
                Errno::ACCESS | Errno::PERM => VfioError::NoAccess(number, e),
                e => OsError::new("open /dev/vfio/N", e).into(),
            })?;
        let mut status =
            uapi::vfio_group_status { argsz: std::mem::size_of::<uapi::vfio_group_status>() as u32, flags: 0 };
        // SAFETY: VFIO_GROUP_GET_STATUS fills one `vfio_group_status`.
        unsafe { ioctl_ptr(fd.as_fd(), VFIO_GROUP_GET_STATUS, &mut status) }
            .map_err(OsError::tag("VFIO_GROUP_GET_STATUS"))?;
        if status.flags & uapi::VFIO_GROUP_FLAGS_VIABLE == 0 {
            return Err(VfioError::GroupNotViable(number));
        }
        let mut cfd = container.as_fd().as_raw_fd();
        // SAFETY: VFIO_GROUP_SET_CONTAINER reads one int, the container fd,
        // which `container` keeps open for the call.
        unsafe { ioctl_ptr(fd.as_fd(), VFIO_GROUP_SET_CONTAINER, &mut cfd) }
            .map_err(OsError::tag("VFIO_GROUP_SET_CONTAINER"))?;
        let group = Arc::new(Group { fd, number, container: container.clone(), memory_decoding: Mutex::new(()) });
        container.attached(&group)?;
        Ok(group)
    }

    /// The group number (`/dev/vfio/N`).
    ///
    /// No system call.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::pci::PciFunction;
    /// # use dmabridge::sys::vfio::{Container, Device};
    /// # fn vfio_device() -> Option<Device> {
    /// #     let f = PciFunction::all().into_iter().find(|f| f.is_vfio_bound())?;
    /// #     Container::open().and_then(|c| c.device(f.address)).map_err(|e| println!("{e}")).ok()
    /// # }
    /// // A function bound to vfio-pci, opened as `Container::device` shows, where
    /// // this machine has one and lets us open it.
    /// let Some(device) = vfio_device() else { return Ok(()) };
    /// let group = device.group();
    /// assert!(std::path::Path::new(&format!("/dev/vfio/{}", group.number())).exists());
    /// assert_eq!(PciFunction::read(device.address()).and_then(|f| f.iommu_group), Some(group.number()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn number(&self) -> u32 {
        self.number
    }

    /// The container the group is attached to.
    ///
    /// No system call.
    ///
    /// # Examples
    ///
    /// ```
    /// # use dmabridge::sys::pci::PciFunction;
    /// # use dmabridge::sys::vfio::{Container, Device};
    /// # fn vfio_device() -> Option<Device> {
    /// #     let f = PciFunction::all().into_iter().find(|f| f.is_vfio_bound())?;
    /// #     Container::open().and_then(|c| c.device(f.address)).map_err(|e| println!("{e}")).ok()
    /// # }
    /// // A function bound to vfio-pci, opened as `Container::device` shows, where
    /// // this machine has one and lets us open it.
    /// let Some(device) = vfio_device() else { return Ok(()) };
    /// let container = device.group().container();
    /// // The container's IOMMU is set up once a group is attached.
    /// assert_ne!(container.iommu_info()?.page_sizes, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn container(&self) -> &Arc<Container> {
        &self.container
    }

    /// Opens the device at `address` in this group.
    ///
    /// Wraps `VFIO_GROUP_GET_DEVICE_FD`, then `VFIO_DEVICE_GET_INFO`.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::pci::PciFunction;
    /// # use dmabridge::sys::vfio::Container;
    ///
    /// // A function bound to vfio-pci, where this machine has one.
    /// let Some(f) = PciFunction::all().into_iter().find(|f| f.is_vfio_bound()) else { return Ok(()) };
    /// # let Some(container) = dmabridge::sys::doc_support::or_skip(Container::open()) else { return Ok(()) };
    /// # let Some(group) = dmabridge::sys::doc_support::or_skip(container.group_of(f.address)) else { return Ok(()) };
    /// let device = group.device(f.address)?;
    /// assert_eq!(device.address(), f.address);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn device(self: &Arc<Self>, address: PciAddress) -> Result<Device, VfioError> {
        let name = CString::new(address.to_string()).expect("addresses have no NUL");
        // SAFETY: VFIO_GROUP_GET_DEVICE_FD reads a NUL-terminated name, which
        // `name` holds for the call, and returns a new fd.
        let fd =
            unsafe { ioctl_ptr(self.fd.as_fd(), VFIO_GROUP_GET_DEVICE_FD, name.as_ptr().cast_mut()) }.map_err(|e| {
                match e {
                    Errno::NODEV | Errno::NOENT | Errno::INVAL => VfioError::NoDevice(address),
                    e => OsError::new("VFIO_GROUP_GET_DEVICE_FD", e).into(),
                }
            })?;
        // SAFETY: on success the ioctl returned a new fd that nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Device::new(fd, address, self.clone())
    }
}

impl Group {
    /// False once the kernel has removed the group (its last device was
    /// removed): `VFIO_GROUP_GET_STATUS` answers `ENODEV` then.
    fn alive(&self) -> bool {
        let mut status =
            uapi::vfio_group_status { argsz: std::mem::size_of::<uapi::vfio_group_status>() as u32, flags: 0 };
        // SAFETY: VFIO_GROUP_GET_STATUS fills one `vfio_group_status`.
        let r = unsafe { ioctl_ptr(self.fd.as_fd(), VFIO_GROUP_GET_STATUS, &mut status) };
        r.err() != Some(Errno::NODEV)
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.container.detached(self.number, self);
    }
}

impl AsFd for Group {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
