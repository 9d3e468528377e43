//! The report as aligned text ([`std::fmt::Display`] for [`Report`]).

use std::fmt;

use super::{FunctionReport, Report, Verdict, MEMLOCK_MIN};

/// Writes aligned item lines: verdict column, label column, detail; a hint
/// goes on its own line under the label, once for a run of items that share it.
struct Text<'a, 'b> {
    f: &'a mut fmt::Formatter<'b>,
    last_hint: Option<String>,
}

impl Text<'_, '_> {
    const VERDICT_WIDTH: usize = 10;
    const LABEL_WIDTH: usize = 22;

    fn title(&mut self, title: &str) -> fmt::Result {
        self.last_hint = None;
        writeln!(self.f, "{title}")
    }

    fn item(
        &mut self,
        verdict: Option<Verdict>,
        indent: usize,
        label: &str,
        detail: &str,
        hint: Option<&str>,
    ) -> fmt::Result {
        let verdict = verdict.map_or("-", Verdict::label);
        let label = format!("{:indent$}{label}", "");
        let line = format!("  {verdict:<vw$} {label:<lw$} {detail}", vw = Self::VERDICT_WIDTH, lw = Self::LABEL_WIDTH);
        writeln!(self.f, "{}", line.trim_end())?;
        match hint {
            Some(h) if self.last_hint.as_deref() != Some(h) => {
                writeln!(self.f, "  {:vw$} {:indent$}fix: {h}", "", "", vw = Self::VERDICT_WIDTH)?;
                self.last_hint = Some(h.to_owned());
            }
            Some(_) => {}
            None => self.last_hint = None,
        }
        Ok(())
    }

    fn function(&mut self, f: &FunctionReport, indent: usize) -> fmt::Result {
        let known = f.known.map(|k| format!(" {k}")).unwrap_or_default();
        let driver = f.function.driver.as_deref().unwrap_or("none");
        let detail = format!("{}{known}, driver {driver}", f.id);
        self.item(f.verdict, indent, &f.function.address.to_string(), &detail, f.hint.as_deref())?;
        if let Some(note) = &f.note {
            writeln!(self.f, "  {:vw$} {:indent$}note: {note}", "", "", vw = Self::VERDICT_WIDTH)?;
        }
        Ok(())
    }
}

fn access_words(present: bool, accessible: bool, what: &str) -> String {
    match (present, accessible) {
        (false, _) => "not present".to_owned(),
        (true, false) => format!("present, but not {what} for this user"),
        (true, true) => format!("present, {what}"),
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut t = Text { f, last_hint: None };
        let (k, io, u, h, m) = (&self.kernel, &self.io_uring, &self.udmabuf, &self.heaps, &self.memlock);

        t.title("Kernel")?;
        t.item(Some(k.verdict), 0, "release", &format!("{} ({})", k.release, k.machine), k.hint.as_deref())?;
        let detail = match &io.error {
            None => "works".to_owned(),
            Some(e) => format!("io_uring_setup failed: {e}"),
        };
        t.item(Some(io.verdict), 0, "io_uring", &detail, io.hint.as_deref())?;

        t.title("udmabuf (memfd pages as dma-bufs)")?;
        t.item(Some(u.verdict), 0, u.path, &access_words(u.present, u.accessible, "read-write"), u.hint.as_deref())?;
        if let Some(l) = u.limits {
            let detail =
                format!("{} per dma-buf (size_limit_mb), {} ranges per list", bytes(l.size_limit), l.list_limit);
            t.item(Some(Verdict::Ok), 0, "limits", &detail, None)?;
        }

        t.title("DMA-BUF heaps")?;
        if h.heaps.is_empty() {
            t.item(Some(h.verdict), 0, h.path, "no heaps", h.hint.as_deref())?;
        }
        for heap in &h.heaps {
            let detail = if heap.accessible { "readable" } else { "not readable for this user" };
            t.item(Some(heap.verdict), 0, &heap.path, detail, heap.hint.as_deref())?;
        }

        t.title("IOMMU")?;
        let i = &self.iommu;
        let detail = match (i.groups, i.units.is_empty()) {
            (0, _) => "no IOMMU groups: the IOMMU is off".to_owned(),
            (n, true) => format!("{n} groups, no IOMMU unit in /sys/class/iommu"),
            (n, false) => format!("{n} groups, units {}", i.units.join(", ")),
        };
        t.item(Some(i.verdict), 0, "groups", &detail, i.hint.as_deref())?;

        t.title("VFIO")?;
        let v = &self.vfio;
        let c = &v.container;
        let mut detail = access_words(c.present, c.accessible, "read-write");
        if c.type1v2 {
            detail.push_str(", type1v2 IOMMU");
        }
        t.item(Some(c.verdict), 0, c.path, &detail, c.hint.as_deref())?;
        for module in &v.modules {
            let detail = if module.loaded { "loaded" } else { "not loaded" };
            t.item(Some(module.verdict), 0, module.name, detail, module.hint.as_deref())?;
        }
        if v.verdict == Verdict::Warning && v.verdict > c.verdict {
            t.item(Some(v.verdict), 0, "devices", "none usable through VFIO", v.hint.as_deref())?;
        }
        for g in &v.groups {
            let detail = if g.node_present {
                let viable = if g.viable { "viable" } else { "not viable" };
                let access = if g.node_accessible { "read-write" } else { "not read-write for this user" };
                format!("{} {access}, {viable}", g.node)
            } else {
                "no member bound to vfio-pci".to_owned()
            };
            t.item(g.verdict, 0, &format!("group {}", g.group), &detail, g.hint.as_deref())?;
            for func in &g.functions {
                t.function(func, 2)?;
            }
        }
        if !v.ungrouped.is_empty() {
            t.item(None, 0, "no IOMMU group", "", None)?;
            for func in &v.ungrouped {
                t.function(func, 2)?;
            }
        }

        t.title("memlock (RLIMIT_MEMLOCK)")?;
        let mut detail = format!("soft {}, hard {}", limit(m.soft), limit(m.hard));
        if m.verdict != Verdict::Ok {
            detail.push_str(&format!(" (below {})", bytes(MEMLOCK_MIN)));
        }
        t.item(Some(m.verdict), 0, "limit", &detail, m.hint.as_deref())?;
        if m.cap_ipc_lock {
            t.item(None, 0, "CAP_IPC_LOCK", "held: processes with it may pin beyond the limit", None)?;
        }

        t.title("Zero-copy paths")?;
        let o = &self.overall;
        for p in &o.paths {
            t.item(Some(p.verdict), 0, p.name, &p.detail, p.hint.as_deref())?;
        }
        t.title("Overall")?;
        t.item(Some(o.verdict), 0, "summary", &o.summary, o.hint.as_deref())
    }
}

/// Bytes as the text report prints them: `64 MiB`, `1.5 GiB`, `4096 B`.
pub(super) fn bytes(n: u64) -> String {
    const UNITS: [(&str, u64); 4] = [("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, size) in UNITS {
        if n >= size {
            return if n % size == 0 {
                format!("{} {unit}", n / size)
            } else {
                format!("{:.1} {unit}", n as f64 / size as f64)
            };
        }
    }
    format!("{n} B")
}

fn limit(v: Option<u64>) -> String {
    v.map_or_else(|| "unlimited".to_owned(), bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_like_ulimit() {
        assert_eq!(bytes(64 << 20), "64 MiB");
        assert_eq!(bytes(8 << 20), "8 MiB");
        assert_eq!(bytes(3 << 29), "1.5 GiB");
        assert_eq!(bytes(65536), "64 KiB");
        assert_eq!(bytes(100), "100 B");
        assert_eq!(limit(None), "unlimited");
    }
}
