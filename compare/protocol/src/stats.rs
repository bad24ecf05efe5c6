//! Latencies in an HDR histogram (microseconds, 3 significant digits), and the S3 test
//! server's request counts.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use hdrhistogram::Histogram;

pub struct Latency {
    histogram: Histogram<u64>,
}

/// Quantiles in milliseconds, for the JSON report.
#[derive(serde::Serialize, Debug)]
pub struct LatencyMs {
    pub count: u64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub mean: f64,
}

impl Latency {
    pub fn new() -> Latency {
        // 1 us to 1 hour.
        Latency {
            histogram: Histogram::new_with_bounds(1, 3_600_000_000, 3)
                .expect("constant histogram bounds"),
        }
    }

    /// Records `count` messages that took `elapsed` (clamped into the histogram's range).
    pub fn record_n(&mut self, elapsed: Duration, count: u64) {
        let micros = u64::try_from(elapsed.as_micros())
            .unwrap_or(u64::MAX)
            .clamp(1, self.histogram.high());
        self.histogram
            .record_n(micros, count)
            .expect("a value clamped into range");
    }

    pub fn merge(&mut self, other: &Latency) {
        self.histogram
            .add(&other.histogram)
            .expect("histograms of the same bounds");
    }

    pub fn count(&self) -> u64 {
        self.histogram.len()
    }

    pub fn ms(&self) -> LatencyMs {
        let q = |q: f64| {
            if self.histogram.is_empty() {
                0.0
            } else {
                self.histogram.value_at_quantile(q) as f64 / 1000.0
            }
        };
        LatencyMs {
            count: self.histogram.len(),
            p50: q(0.5),
            p90: q(0.9),
            p99: q(0.99),
            p999: q(0.999),
            max: self.histogram.max() as f64 / 1000.0,
            mean: self.histogram.mean() / 1000.0,
        }
    }
}

/// The S3 test server's counts (`walab s3-server --requests-file`: lines `KIND N`).
pub fn read_requests(path: &Path) -> Result<BTreeMap<String, u64>, String> {
    let text =
        std::fs::read_to_string(path).map_err(|error| format!("{}: {error}", path.display()))?;
    let mut counts = BTreeMap::new();
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        let mut words = line.split_whitespace();
        match (
            words.next(),
            words.next().and_then(|n| n.parse::<u64>().ok()),
            words.next(),
        ) {
            (Some(kind), Some(n), None) => {
                counts.insert(kind.to_string(), n);
            }
            _ => return Err(format!("{}: not a `KIND N` line: {line}", path.display())),
        }
    }
    Ok(counts)
}

/// A process's CPU time so far (user + system, from `/proc/PID/stat`).
pub fn process_cpu(pid: u32) -> Result<Duration, String> {
    let path = format!("/proc/{pid}/stat");
    let text = std::fs::read_to_string(&path)
        .map_err(|error| format!("--server-pid {pid}: {path}: {error}"))?;
    // The command name (field 2) may hold spaces: count the fields after its `)`.
    let after_name = text
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .ok_or_else(|| format!("{path}: no command name"))?;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // Fields 14 and 15 (utime, stime) are the 12th and 13th after the name.
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .ok_or_else(|| format!("{path}: no CPU times"))
    };
    let total = ticks(11)? + ticks(12)?;
    // The kernel's USER_HZ, 100 on Linux everywhere this runs.
    Ok(Duration::from_millis(total * 10))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_come_from_the_recorded_latencies() {
        let mut latency = Latency::new();
        latency.record_n(Duration::from_millis(2), 99);
        latency.record_n(Duration::from_millis(50), 1);
        let ms = latency.ms();
        assert_eq!(ms.count, 100);
        assert!((ms.p50 - 2.0).abs() < 0.01, "{ms:?}");
        assert!((ms.max - 50.0).abs() < 0.1, "{ms:?}");
    }

    #[test]
    fn this_process_has_used_some_cpu_and_a_missing_one_is_named() {
        let spin = std::time::Instant::now();
        while spin.elapsed() < Duration::from_millis(30) {}
        assert!(process_cpu(std::process::id()).unwrap() > Duration::ZERO);
        assert!(process_cpu(u32::MAX).unwrap_err().contains("--server-pid"));
    }

    #[test]
    fn a_requests_file_is_read_by_kind_and_a_bad_line_named() {
        let dir =
            std::env::temp_dir().join(format!("walab-compare-protocol-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good");
        std::fs::write(&good, "put 12\nget 3\n").unwrap();
        let counts = read_requests(&good).unwrap();
        assert_eq!(counts["put"], 12);
        assert_eq!(counts["get"], 3);
        let bad = dir.join("bad");
        std::fs::write(&bad, "put twelve\n").unwrap();
        assert!(read_requests(&bad).unwrap_err().contains("put twelve"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
