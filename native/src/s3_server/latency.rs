//! How long the test server makes each request wait: one distribution per request kind.
//!
//! A loopback server answers a PUT in a millisecond or two; S3 Standard takes tens of
//! milliseconds. A WAL tuned against the first is tuned for a store nobody has: group
//! commit gathers what arrives while an upload is in flight, so the round trip sets
//! both the latency and the size of every bulk. The server therefore holds every
//! request for a drawn time before it handles it.
//!
//! The built-in profiles are the ones the simulator's remote chapter uses
//! ([`walab_core::sim::remote::LatencyProfile`]), so a simulated run and a run against
//! this server draw from the same ranges. Their sources are published figures, not
//! measurements, and neither gives a figure per request kind, so every kind draws from
//! the one range:
//!
//! - `s3-standard`: 20 to 40 ms, uniform. "Tens of milliseconds" per round trip is the
//!   stream store's documentation's figure for S3 Standard.
//! - `s3-express`: 2 to 8 ms, uniform. AWS documents S3 Express One Zone as "consistent
//!   single-digit millisecond first-byte read and write request latencies", "up to 10x
//!   faster than S3 Standard" ("Optimizing S3 Express One Zone performance", Amazon S3
//!   User Guide).
//! - `none`: no added wait (the loopback server as it is).
//!
//! A measured store is described by a file instead (any other `--latency` value is read
//! as a path): one request per line, its kind and its latency in milliseconds, for
//! example from a client log against the real bucket. Each kind's draws are uniform
//! over its own samples (an empirical distribution), and every kind needs at least one:
//!
//! ```text
//! # kind  ms
//! put     31.4
//! head    9.8
//! get     14.2
//! list    42.0
//! delete  18.5
//! ```

use std::fmt;
use std::path::Path;
use std::time::Duration;

use walab_core::rng::Rng;
use walab_core::sim::remote::LatencyProfile as SimProfile;
use walab_core::sim::SyncLatency;
use walab_core::time::Nanos;

/// What a request does, as far as its latency goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RequestKind {
    /// PUT, COPY and the multipart calls: everything that writes an object.
    Put,
    /// HEAD of an object or a bucket.
    Head,
    /// GET of an object.
    Get,
    /// LIST of a bucket's objects (and of buckets, and of parts).
    List,
    /// DELETE of one object, several, or a bucket.
    Delete,
}

impl RequestKind {
    pub const ALL: [RequestKind; 5] =
        [RequestKind::Put, RequestKind::Head, RequestKind::Get, RequestKind::List, RequestKind::Delete];

    pub fn name(self) -> &'static str {
        match self {
            RequestKind::Put => "put",
            RequestKind::Head => "head",
            RequestKind::Get => "get",
            RequestKind::List => "list",
            RequestKind::Delete => "delete",
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    fn parse(text: &str) -> Option<RequestKind> {
        RequestKind::ALL.into_iter().find(|kind| kind.name().eq_ignore_ascii_case(text))
    }
}

/// Samples one measured latency file may hold at most.
pub const LATENCY_FILE_SAMPLES_MAX: usize = 1_000_000;

/// A latency distribution for each request kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LatencyProfile {
    /// `none`, `s3-standard`, `s3-express`, or the file's path.
    name: String,
    /// Indexed by [`RequestKind`]; `None` adds no wait.
    kinds: [Option<SyncLatency>; 5],
}

impl fmt::Display for LatencyProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

impl LatencyProfile {
    /// No added wait.
    pub fn none() -> LatencyProfile {
        LatencyProfile { name: "none".to_string(), kinds: [None, None, None, None, None] }
    }

    fn same_for_every_kind(name: &str, latency: SyncLatency) -> LatencyProfile {
        let kinds = [(); 5].map(|()| Some(latency.clone()));
        LatencyProfile { name: name.to_string(), kinds }
    }

    /// The built-in profile called `name`, if there is one.
    pub fn builtin(name: &str) -> Option<LatencyProfile> {
        match name {
            "none" => Some(LatencyProfile::none()),
            "s3-standard" => Some(Self::same_for_every_kind(name, SimProfile::S3Standard.latency())),
            "s3-express" => Some(Self::same_for_every_kind(name, SimProfile::S3Express.latency())),
            _ => None,
        }
    }

    /// A built-in profile's name, or else the path of a measured latency file.
    pub fn parse(text: &str) -> Result<LatencyProfile, String> {
        if let Some(profile) = LatencyProfile::builtin(text) {
            return Ok(profile);
        }
        let path = Path::new(text);
        if !path.exists() {
            return Err(format!(
                "{text}: not a latency profile (none, s3-standard, s3-express) and no such file"
            ));
        }
        let contents = std::fs::read_to_string(path).map_err(|error| format!("{text}: cannot read: {error}"))?;
        LatencyProfile::from_samples_text(text, &contents)
    }

    /// Reads a measured latency file's text (see the module docs); `name` names it in
    /// errors and in [`LatencyProfile`]'s `Display`.
    pub fn from_samples_text(name: &str, contents: &str) -> Result<LatencyProfile, String> {
        let mut samples: [Vec<Nanos>; 5] = Default::default();
        let mut total = 0usize;
        for (number, line) in contents.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let mut fields = line.split_whitespace();
            let (Some(kind), Some(millis), None) = (fields.next(), fields.next(), fields.next()) else {
                return Err(format!("{name}:{}: expected `KIND MILLISECONDS`, found {line:?}", number + 1));
            };
            let kind = RequestKind::parse(kind).ok_or_else(|| {
                format!("{name}:{}: unknown request kind {kind:?} (put, head, get, list, delete)", number + 1)
            })?;
            let latency = Nanos::parse_millis(millis)
                .ok_or_else(|| format!("{name}:{}: {millis:?} is not a number of milliseconds", number + 1))?;
            total += 1;
            if total > LATENCY_FILE_SAMPLES_MAX {
                return Err(format!("{name}: more than {LATENCY_FILE_SAMPLES_MAX} samples"));
            }
            samples[kind.index()].push(latency);
        }
        if let Some(kind) = RequestKind::ALL.into_iter().find(|kind| samples[kind.index()].is_empty()) {
            return Err(format!("{name}: no {} samples (every kind needs at least one)", kind.name()));
        }
        let kinds = samples.map(|samples| Some(SyncLatency::Samples { samples }));
        Ok(LatencyProfile { name: name.to_string(), kinds })
    }

    /// A wait for one request of `kind`.
    pub fn draw(&self, kind: RequestKind, rng: &mut Rng) -> Duration {
        match &self.kinds[kind.index()] {
            None => Duration::ZERO,
            Some(latency) => Duration::from_nanos(latency.draw(rng).0),
        }
    }

    /// Whether any request waits at all.
    pub fn adds_latency(&self) -> bool {
        self.kinds.iter().any(Option::is_some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_profiles_draw_within_the_simulators_ranges() {
        let mut rng = Rng::new(7);
        let standard = LatencyProfile::parse("s3-standard").unwrap();
        let express = LatencyProfile::parse("s3-express").unwrap();
        for kind in RequestKind::ALL {
            for _ in 0..200 {
                let drawn = standard.draw(kind, &mut rng);
                assert!(drawn >= Duration::from_millis(20), "{drawn:?}");
                assert!(drawn <= Duration::from_millis(40), "{drawn:?}");
                let drawn = express.draw(kind, &mut rng);
                assert!(drawn >= Duration::from_millis(2), "{drawn:?}");
                assert!(drawn <= Duration::from_millis(8), "{drawn:?}");
            }
        }
        assert_eq!(LatencyProfile::parse("none").unwrap().draw(RequestKind::Put, &mut rng), Duration::ZERO);
        assert!(!LatencyProfile::none().adds_latency());
    }

    #[test]
    fn a_samples_file_draws_each_kind_from_its_own_samples() {
        let text = "# measured\nput 30\nput 50.5\nhead 1.25 # one\nget 2\nlist 3\ndelete 4\n";
        let profile = LatencyProfile::from_samples_text("m.txt", text).unwrap();
        let mut rng = Rng::new(1);
        let mut puts: Vec<Duration> = (0..100).map(|_| profile.draw(RequestKind::Put, &mut rng)).collect();
        puts.sort();
        puts.dedup();
        assert_eq!(puts, vec![Duration::from_millis(30), Duration::from_micros(50_500)]);
        assert_eq!(profile.draw(RequestKind::Head, &mut rng), Duration::from_micros(1_250));
        assert_eq!(profile.draw(RequestKind::Delete, &mut rng), Duration::from_millis(4));
        assert_eq!(profile.to_string(), "m.txt");
    }

    #[test]
    fn bad_latency_files_are_refused_with_the_line() {
        let missing = LatencyProfile::from_samples_text("m", "put 1\nhead 1\nget 1\nlist 1\n").unwrap_err();
        assert_eq!(missing, "m: no delete samples (every kind needs at least one)");
        let kind = LatencyProfile::from_samples_text("m", "post 1\n").unwrap_err();
        assert_eq!(kind, "m:1: unknown request kind \"post\" (put, head, get, list, delete)");
        let number = LatencyProfile::from_samples_text("m", "\nput -3\n").unwrap_err();
        assert_eq!(number, "m:2: \"-3\" is not a number of milliseconds");
        let shape = LatencyProfile::from_samples_text("m", "put\n").unwrap_err();
        assert_eq!(shape, "m:1: expected `KIND MILLISECONDS`, found \"put\"");
        let nothing = LatencyProfile::parse("/nonexistent/latency.txt").unwrap_err();
        assert!(nothing.contains("not a latency profile"), "{nothing}");
    }
}
