//! `DMABRIDGE_BAR_DEVICE`: which PCI BARs the platform offers as device
//! memory.
//!
//! The variable holds one or more entries separated by `;`, each
//! `ADDRESS,bar=N[,engine=ADDRESS]`, e.g. `0000:00:08.0,bar=2` or
//! `0000:00:08.0,bar=2,engine=0000:00:10.0`. There is no auto-discovery: the
//! platform keeps the VFIO groups it opens for the life of the process, so a
//! BAR is claimed only when someone asks for it.

use std::str::FromStr;

use crate::sys::pci::PciAddress;

/// The environment variable read by [`BarConfig::from_env`].
pub const ENV: &str = "DMABRIDGE_BAR_DEVICE";

/// Where an entry whose PCI address cannot be read is reported in
/// [`Platform::skipped`](crate::runtime::platform::Platform::skipped):
/// `ffff:ff:1f.7`, an address no configured device has.
pub const UNPARSED: PciAddress = PciAddress { domain: 0xffff, bus: 0xff, device: 0x1f, function: 7 };

/// One configured BAR device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BarConfig {
    /// The PCI function whose BAR is the device memory (bound to vfio-pci).
    pub address: PciAddress,
    /// The BAR index, 0 to 5 (ivshmem-plain: 2).
    pub bar: u32,
    /// The edu function whose DMA engine moves bytes in and out of the BAR
    /// peer-to-peer; without one, the CPU copies through the BAR mapping.
    pub engine: Option<PciAddress>,
}

/// An entry that is not a [`BarConfig`], and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{ENV} entry {text:?}: {reason}")]
pub struct BadBarConfig {
    /// The entry as written.
    pub text: String,
    /// Its PCI address if that much could be read, else [`UNPARSED`].
    pub address: PciAddress,
    /// What is wrong and how to write it.
    pub reason: String,
}

const FORM: &str = "write ADDRESS,bar=N[,engine=ADDRESS], e.g. 0000:00:08.0,bar=2,engine=0000:00:10.0";

impl FromStr for BarConfig {
    type Err = BadBarConfig;

    /// Parses one entry, `ADDRESS,bar=N[,engine=ADDRESS]`.
    fn from_str(s: &str) -> Result<BarConfig, BadBarConfig> {
        let text = s.trim();
        let mut parts = text.split(',').map(str::trim);
        let first = parts.next().unwrap_or_default();
        let bad = |address: PciAddress, reason: String| BadBarConfig { text: text.to_owned(), address, reason };
        let address: PciAddress = first.parse().map_err(|e| bad(UNPARSED, format!("{e}; {FORM}")))?;
        let (mut bar, mut engine) = (None, None);
        for part in parts {
            let (key, value) = part.split_once('=').map(|(k, v)| (k.trim(), v.trim())).unwrap_or((part, ""));
            match key {
                "bar" if bar.is_none() => match value.parse::<u32>() {
                    Ok(n) if n <= 5 => bar = Some(n),
                    _ => return Err(bad(address, format!("bar={value:?} is not a BAR index from 0 to 5"))),
                },
                "engine" if engine.is_none() => {
                    engine = Some(value.parse::<PciAddress>().map_err(|e| bad(address, format!("engine: {e}")))?)
                }
                "bar" | "engine" => return Err(bad(address, format!("{key}= is given twice"))),
                _ => return Err(bad(address, format!("unknown option {part:?} (only bar= and engine=); {FORM}"))),
            }
        }
        let bar = bar.ok_or_else(|| bad(address, format!("no bar=N; {FORM}")))?;
        if engine == Some(address) {
            return Err(bad(address, "the engine must be another function (an edu DMA engine)".into()));
        }
        Ok(BarConfig { address, bar, engine })
    }
}

impl BarConfig {
    /// Parses a whole variable value: entries separated by `;` (empty ones
    /// are ignored), each either a configuration or why it is not one.
    ///
    /// No OpenCL function of its own: device discovery (`clGetDeviceIDs`).
    ///
    /// ```
    /// use dmabridge::runtime::backend::bar::BarConfig;
    /// let v = BarConfig::parse_list("0000:00:08.0,bar=2,engine=0000:00:10.0; 00:09.0,bar=7");
    /// let ok = v[0].as_ref().unwrap();
    /// assert_eq!((ok.address.to_string(), ok.bar), ("0000:00:08.0".to_owned(), 2));
    /// assert_eq!(ok.engine.unwrap().to_string(), "0000:00:10.0");
    /// assert!(v[1].as_ref().unwrap_err().reason.contains("0 to 5"));
    /// ```
    pub fn parse_list(text: &str) -> Vec<Result<BarConfig, BadBarConfig>> {
        text.split(';').filter(|e| !e.trim().is_empty()).map(str::parse).collect()
    }

    /// The entries of [`ENV`] (none when it is unset; a value that is not
    /// UTF-8 is one bad entry).
    ///
    /// No OpenCL function of its own: device discovery (`clGetDeviceIDs`).
    ///
    /// ```
    /// use dmabridge::runtime::backend::bar::{BarConfig, ENV};
    /// if std::env::var_os(ENV).is_none() {
    ///     assert!(BarConfig::from_env().is_empty());
    /// }
    /// ```
    pub fn from_env() -> Vec<Result<BarConfig, BadBarConfig>> {
        match std::env::var(ENV) {
            Ok(v) => BarConfig::parse_list(&v),
            Err(std::env::VarError::NotPresent) => Vec::new(),
            Err(e) => vec![Err(BadBarConfig {
                text: format!("{:?}", std::env::var_os(ENV).unwrap_or_default()),
                address: UNPARSED,
                reason: e.to_string(),
            })],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_parse_and_bad_ones_say_why() {
        let c: BarConfig = " 0000:00:08.0 , bar=2 ".parse().unwrap();
        assert_eq!((c.address.to_string(), c.bar, c.engine), ("0000:00:08.0".to_owned(), 2, None));
        let cases = [
            ("", "not a PCI address"),
            ("08.0,bar=2", "not a PCI address"),
            ("0000:00:08.0", "no bar="),
            ("0000:00:08.0,bar=6", "0 to 5"),
            ("0000:00:08.0,bar=x", "0 to 5"),
            ("0000:00:08.0,bar=2,bar=2", "twice"),
            ("0000:00:08.0,bar=2,engine=zz", "engine"),
            ("0000:00:08.0,bar=2,engine=0000:00:08.0", "another function"),
            ("0000:00:08.0,bar=2,speed=9", "unknown option"),
        ];
        for (text, why) in cases {
            let e = text.parse::<BarConfig>().unwrap_err();
            assert!(e.to_string().contains(why), "{text}: {e}");
            assert!(e.to_string().contains(ENV), "{e}");
        }
        assert_eq!("x,bar=2".parse::<BarConfig>().unwrap_err().address, UNPARSED);
        assert_eq!("00:08.0,bar=9".parse::<BarConfig>().unwrap_err().address.to_string(), "0000:00:08.0");
        assert_eq!(BarConfig::parse_list(" ; ;").len(), 0);
        assert_eq!(BarConfig::parse_list("00:08.0,bar=2;00:09.0,bar=0,engine=00:10.0").len(), 2);
    }
}
