//! Which CPUs the file WAL's syncing threads run on (`--sync-cpus`).
//!
//! An `fdatasync` sleeps twice (for the data write, then for the cache flush), and each
//! sleep ends with the disk's completion interrupt waking the syncing thread. A device
//! with a single queue (virtio-blk in most VMs, many SATA/SAS controllers) delivers every
//! completion interrupt to one CPU. A thread that slept on another CPU is then woken by
//! a cross-CPU interrupt, which in a VM means the host must run a halted virtual CPU
//! again; or, if the interrupt's CPU is busy with writers, the thread waits for it
//! (what that costs on a two-core VM: BENCHMARKS.md, "Measurements behind the code").
//!
//! So by default (`auto`) the driver and the sync threads run on the CPUs that take the
//! log device's completion interrupts, when those are a strict subset of the CPUs the
//! process may use. Devices with a queue per CPU (NVMe) spread their interrupts over
//! every CPU and nothing is pinned; nor is anything where the device cannot be found
//! (tmpfs, overlay, device-mapper). `off` never pins; a list (`1`, `0,2-3`) pins there.
//! The writers' threads are never touched: they belong to the caller.
//!
//! The device's interrupts are found through sysfs: the directory's `st_dev`, its block
//! device under `/sys/dev/block`, the PCI function above it and that function's
//! `msi_irqs` (or legacy `irq`). Their counts in `/proc/interrupts` tell which of them
//! carry completions (a queue's interrupt, not the rarely raised config one), and each
//! one's `effective_affinity_list` where it is delivered now.

use std::path::{Path, PathBuf};

pub use crate::wal::os::{allowed_cpus, pin_current_thread};

/// `--sync-cpus`: where the file WAL's syncing threads run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SyncCpus {
    /// On the CPUs that take the log device's completion interrupts, if those are
    /// fewer than the CPUs this process may use; otherwise wherever Linux puts them.
    Auto,
    /// Wherever Linux puts them.
    Off,
    /// On these CPUs.
    List(Vec<usize>),
}

impl SyncCpus {
    /// Parses `auto`, `off` or a CPU list such as `1` or `0,2-3`; the error is the line
    /// to print.
    pub fn parse(text: &str) -> Result<SyncCpus, String> {
        match text {
            "auto" => Ok(SyncCpus::Auto),
            "off" => Ok(SyncCpus::Off),
            _ => parse_cpu_list(text)
                .map(SyncCpus::List)
                .map_err(|why| format!("--sync-cpus {text}: {why} (use auto, off, or CPUs such as 1 or 0,2-3)")),
        }
    }

    /// The CPUs to pin to for a log in `dir`, or `None` to leave the threads alone. A
    /// list naming no CPU this process may use is an error (the line to print).
    pub fn resolve(&self, dir: &Path) -> Result<Option<Vec<usize>>, String> {
        match self {
            SyncCpus::Off => Ok(None),
            SyncCpus::Auto => Ok(completion_cpus(dir).and_then(|cpus| worth_pinning(cpus, &allowed_cpus()?))),
            SyncCpus::List(cpus) => {
                let allowed = allowed_cpus();
                let usable: Vec<usize> = match &allowed {
                    Some(allowed) => cpus.iter().copied().filter(|cpu| allowed.contains(cpu)).collect(),
                    None => cpus.clone(),
                };
                if usable.is_empty() {
                    return Err(format!(
                        "--sync-cpus {}: none of these CPUs is available to this process{}",
                        format_cpu_list(cpus),
                        allowed.map(|a| format!(" (it may use {})", format_cpu_list(&a))).unwrap_or_default()
                    ));
                }
                Ok(Some(usable))
            }
        }
    }
}

/// `cpus` if they are a non-empty strict subset of `allowed` (pinning to every CPU
/// would change nothing), restricted to `allowed`.
fn worth_pinning(cpus: Vec<usize>, allowed: &[usize]) -> Option<Vec<usize>> {
    let usable: Vec<usize> = cpus.into_iter().filter(|cpu| allowed.contains(cpu)).collect();
    (!usable.is_empty() && usable.len() < allowed.len()).then_some(usable)
}

/// Parses a Linux CPU list (`1`, `0-3`, `0,2-3`), sorted and without repeats.
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>, String> {
    const CPUS_MAX: usize = 1 << 16;
    let mut cpus = Vec::new();
    for part in text.trim().split(',') {
        let number = |s: &str| -> Result<usize, String> {
            let cpu: usize = s.trim().parse().map_err(|_| format!("{s:?} is not a CPU number"))?;
            if cpu >= CPUS_MAX {
                return Err(format!("CPU {cpu} is out of range"));
            }
            Ok(cpu)
        };
        match part.split_once('-') {
            Some((low, high)) => {
                let (low, high) = (number(low)?, number(high)?);
                if low > high {
                    return Err(format!("{part:?} is an empty range"));
                }
                cpus.extend(low..=high);
            }
            None => cpus.push(number(part)?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Formats CPUs the way Linux lists them (`0,2-3`).
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j { cpus[i].to_string() } else { format!("{}-{}", cpus[i], cpus[j]) });
        i = j + 1;
    }
    parts.join(",")
}

/// The CPUs that take the completion interrupts of the block device holding `dir` (or
/// its nearest existing ancestor), if they can be found.
pub fn completion_cpus(dir: &Path) -> Option<Vec<usize>> {
    let irqs = device_irqs(dir)?;
    let interrupts = std::fs::read_to_string("/proc/interrupts").ok()?;
    let counts = interrupt_counts(&interrupts, &irqs);
    let busy = busy_irqs(&counts);
    let mut cpus = Vec::new();
    for (irq, per_cpu) in counts.iter().filter(|(irq, _)| busy.contains(irq)) {
        // Where the interrupt goes now; failing that, where it has gone.
        let now = std::fs::read_to_string(format!("/proc/irq/{irq}/effective_affinity_list"))
            .ok()
            .and_then(|text| parse_cpu_list(&text).ok())
            .filter(|cpus| !cpus.is_empty());
        match now {
            Some(now) => cpus.extend(now),
            None => cpus.extend(cpus_that_took_most(per_cpu)),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    (!cpus.is_empty()).then_some(cpus)
}

/// The sysfs directory of the disk holding `path` (or its nearest existing ancestor):
/// `/sys/dev/block/MAJOR:MINOR` resolved, and for a partition its disk. `None` for file
/// systems on no block device (tmpfs, overlay and the like).
pub fn disk_sysfs_dir(path: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let existing = path.ancestors().find(|p| p.exists())?;
    let dev = std::fs::metadata(existing).ok()?.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    if major == 0 {
        return None;
    }
    let mut device = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).ok()?;
    // A partition's directory has a `partition` file; its queue and device are the disk's.
    if device.join("partition").exists() {
        device = device.parent()?.to_path_buf();
    }
    Some(device)
}

/// The interrupt numbers of the PCI function behind the block device holding `dir`.
fn device_irqs(dir: &Path) -> Option<Vec<u32>> {
    let device = disk_sysfs_dir(dir)?;
    // Up from .../0000:00:02.0/virtio1/block/vda (or .../nvme/nvme0/nvme0n1) to the
    // PCI function, the first ancestor that lists its interrupts.
    let function: PathBuf = device.ancestors().find(|p| p.join("msi_irqs").is_dir() || p.join("irq").is_file())?.into();
    let mut irqs: Vec<u32> = match std::fs::read_dir(function.join("msi_irqs")) {
        Ok(entries) => entries.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect(),
        Err(_) => Vec::new(),
    };
    if irqs.is_empty() {
        irqs.extend(std::fs::read_to_string(function.join("irq")).ok()?.trim().parse::<u32>().ok().filter(|&irq| irq > 0));
    }
    irqs.sort_unstable();
    (!irqs.is_empty()).then_some(irqs)
}

/// Per-CPU counts of the interrupts `irqs` in a `/proc/interrupts` text: for each IRQ
/// found, its counts by CPU number (the header names the CPUs, which need not be
/// contiguous when some are offline).
fn interrupt_counts(text: &str, irqs: &[u32]) -> Vec<(u32, Vec<(usize, u64)>)> {
    let mut lines = text.lines();
    let Some(header) = lines.next() else { return Vec::new() };
    let cpus: Vec<usize> = header.split_whitespace().filter_map(|name| name.strip_prefix("CPU")?.parse().ok()).collect();
    let mut found = Vec::new();
    for line in lines {
        let Some((label, rest)) = line.trim_start().split_once(':') else { continue };
        let Ok(irq) = label.parse::<u32>() else { continue };
        if !irqs.contains(&irq) {
            continue;
        }
        let counts: Vec<(usize, u64)> =
            cpus.iter().copied().zip(rest.split_whitespace().map_while(|field| field.parse::<u64>().ok())).collect();
        found.push((irq, counts));
    }
    found
}

/// The interrupts that carry the device's traffic: each with at least 1% of the
/// device's total (a config or error interrupt raised a few times is left out).
fn busy_irqs(counts: &[(u32, Vec<(usize, u64)>)]) -> Vec<u32> {
    let total: u64 = counts.iter().flat_map(|(_, per_cpu)| per_cpu.iter().map(|&(_, n)| n)).sum();
    if total == 0 {
        return Vec::new();
    }
    counts
        .iter()
        .filter(|(_, per_cpu)| per_cpu.iter().map(|&(_, n)| n).sum::<u64>() * 100 >= total)
        .map(|(irq, _)| *irq)
        .collect()
}

/// The CPUs that took at least 1% of one interrupt's deliveries.
fn cpus_that_took_most(per_cpu: &[(usize, u64)]) -> Vec<usize> {
    let total: u64 = per_cpu.iter().map(|&(_, n)| n).sum();
    per_cpu.iter().filter(|&&(_, n)| total > 0 && n * 100 >= total).map(|&(cpu, _)| cpu).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A two-core VM's /proc/interrupts, trimmed: virtio1 (the disk) has a config
    /// interrupt (35) and one queue (36), all of whose completions went to CPU 1.
    const VM: &str = "           CPU0       CPU1       \n\
         28:          0          0 PCI-MSIX-0000:00:01.0   0-edge      virtio0-config\n\
         35:          0          1 PCI-MSIX-0000:00:02.0   0-edge      virtio1-config\n\
         36:          0    6697541 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n\
        NMI:          0          0   Non-maskable interrupts\n";

    #[test]
    fn the_queue_interrupt_is_found_and_the_config_one_left_out() {
        let counts = interrupt_counts(VM, &[35, 36]);
        assert_eq!(counts, vec![(35, vec![(0, 0), (1, 1)]), (36, vec![(0, 0), (1, 6_697_541)])]);
        assert_eq!(busy_irqs(&counts), vec![36]);
        assert_eq!(cpus_that_took_most(&counts[1].1), vec![1]);
        assert!(interrupt_counts(VM, &[99]).is_empty());
        assert!(busy_irqs(&interrupt_counts(VM, &[28])).is_empty(), "an interrupt never raised carries nothing");
    }

    #[test]
    fn offline_cpus_keep_the_header_numbering() {
        let text = "  CPU0 CPU2 CPU3\n 40: 5 900 95 PCI-MSI nvme0q1\n";
        assert_eq!(interrupt_counts(text, &[40]), vec![(40, vec![(0, 5), (2, 900), (3, 95)])]);
        assert_eq!(cpus_that_took_most(&[(0, 5), (2, 900), (3, 95)]), vec![2, 3]);
    }

    #[test]
    fn cpu_lists_parse_and_format_like_linux() {
        assert_eq!(parse_cpu_list("1"), Ok(vec![1]));
        assert_eq!(parse_cpu_list("0,2-3\n"), Ok(vec![0, 2, 3]));
        assert_eq!(parse_cpu_list("3,1,1-2"), Ok(vec![1, 2, 3]));
        assert!(parse_cpu_list("3-1").unwrap_err().contains("empty range"));
        assert!(parse_cpu_list("x").unwrap_err().contains("not a CPU number"));
        assert!(parse_cpu_list("").is_err());
        assert!(parse_cpu_list("99999999").unwrap_err().contains("out of range"));
        assert_eq!(format_cpu_list(&[0, 2, 3, 4, 7]), "0,2-4,7");
        assert_eq!(format_cpu_list(&[1]), "1");
    }

    #[test]
    fn sync_cpus_flag_values() {
        assert_eq!(SyncCpus::parse("auto"), Ok(SyncCpus::Auto));
        assert_eq!(SyncCpus::parse("off"), Ok(SyncCpus::Off));
        assert_eq!(SyncCpus::parse("0,2-3"), Ok(SyncCpus::List(vec![0, 2, 3])));
        let refusal = SyncCpus::parse("fast").unwrap_err();
        assert!(refusal.starts_with("--sync-cpus fast:") && refusal.contains("auto, off"), "{refusal}");
        assert_eq!(SyncCpus::Off.resolve(Path::new("/")), Ok(None));
        let refusal = SyncCpus::List(vec![60000]).resolve(Path::new("/")).unwrap_err();
        assert!(refusal.contains("none of these CPUs is available"), "{refusal}");
    }

    #[test]
    fn pinning_only_to_a_strict_subset_of_the_allowed_cpus() {
        assert_eq!(worth_pinning(vec![1], &[0, 1]), Some(vec![1]));
        assert_eq!(worth_pinning(vec![0, 1], &[0, 1]), None, "every CPU: nothing to gain");
        assert_eq!(worth_pinning(vec![5], &[0, 1]), None, "a CPU this process may not use");
        assert_eq!(worth_pinning(vec![1, 5], &[0, 1, 2]), Some(vec![1]));
    }

    #[test]
    fn a_directory_on_no_device_pins_nothing() {
        // /proc is a pseudo filesystem (device major 0): no device, no interrupts.
        assert_eq!(completion_cpus(Path::new("/proc/self")), None);
    }

    #[test]
    fn a_pinned_thread_runs_only_where_it_was_pinned() {
        let Some(allowed) = allowed_cpus() else { return };
        let last = *allowed.last().expect("a thread may run somewhere");
        let seen = std::thread::spawn(move || {
            pin_current_thread(&[last]);
            allowed_cpus()
        })
        .join()
        .expect("the thread ran");
        assert_eq!(seen, Some(vec![last]));
    }
}
