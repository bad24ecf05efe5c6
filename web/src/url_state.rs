//! Every view of the lab is a URL.
//!
//! The query string carries the Part, the scenario's parameters, the seed and the power
//! cut's instant, so a student can send exactly what they saw: opening the link rebuilds
//! the same run and the same moment. Parsing is strict and forgiving at once: a value that
//! does not parse is reported by name (`sync=fast: not a number of milliseconds`) and the
//! default is used in its place, so the page always opens and always says what it ignored.
//!
//! This module is plain Rust over strings, so it is tested natively; `main.rs` reads
//! `location.search` and writes `history.replaceState` at the edge.

use walab_core::time::Nanos;

pub use crate::format::format_millis;

/// How the log decides when to sync (the knob Parts 5 and 6 turn): the core's names,
/// so `policy=group` on the page is `--policy group` on the command line.
pub use walab_core::group_commit::PolicyKind;

/// The policies the page offers.
pub const PAGE_POLICIES: [PolicyKind; 5] =
    [PolicyKind::Group, PolicyKind::PerWrite, PolicyKind::Window, PolicyKind::NoSync, PolicyKind::Periodic];

/// The page's policy named `name` in a URL.
pub fn page_policy(name: &str) -> Option<PolicyKind> {
    PolicyKind::from_name(name).filter(|kind| PAGE_POLICIES.contains(kind))
}

/// Which arrivals a model runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// The tiny store's 24 writes.
    Tiny,
    /// A steady load, evenly spaced.
    Steady,
    /// A steady load with random (Poisson) arrivals from the seed.
    Random,
}

impl Scenario {
    pub const ALL: [Scenario; 3] = [Scenario::Tiny, Scenario::Steady, Scenario::Random];

    pub fn url_name(self) -> &'static str {
        match self {
            Scenario::Tiny => "tiny",
            Scenario::Steady => "steady",
            Scenario::Random => "random",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Scenario::Tiny => "the tiny store's 24 writes",
            Scenario::Steady => "steady load, evenly spaced",
            Scenario::Random => "steady load, random arrivals",
        }
    }

    pub fn from_url_name(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|scenario| scenario.url_name() == name)
    }
}

/// A fault injected into the tiny store's run (Part 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    None,
    /// Branch E1: the log's sync for batch B11 returns EIO.
    LogSync,
    /// Branch E2: the sync of the flushed file F11 fails.
    FlushSync,
}

impl Fault {
    pub const ALL: [Fault; 3] = [Fault::None, Fault::LogSync, Fault::FlushSync];

    pub fn url_name(self) -> &'static str {
        match self {
            Fault::None => "none",
            Fault::LogSync => "e1",
            Fault::FlushSync => "e2",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Fault::None => "no fault",
            Fault::LogSync => "E1: a log sync returns EIO",
            Fault::FlushSync => "E2: F11's fsync fails",
        }
    }

    pub fn from_url_name(name: &str) -> Option<Fault> {
        Fault::ALL.into_iter().find(|fault| fault.url_name() == name)
    }
}

/// What the log's driver does about a failed sync.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handling {
    /// Fail the waiters, stop, recover.
    Right,
    /// Retry the sync and carry on.
    Wrong,
}

impl Handling {
    /// The name in a link: `walab sim power-cut --on-sync-error`'s.
    pub fn url_name(self) -> &'static str {
        match self {
            Handling::Right => "fail-stop",
            Handling::Wrong => "retry",
        }
    }

    /// A link's value: the CLI's name, or the page's earlier `right` and `wrong`.
    pub fn from_url_name(name: &str) -> Option<Handling> {
        match name {
            "fail-stop" | "right" => Some(Handling::Right),
            "retry" | "wrong" => Some(Handling::Wrong),
            _ => None,
        }
    }
}

/// The system call Part 2's figure runs on a record (`call=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncCall {
    Write,
    Fsync,
    Fdatasync,
    OSync,
    ODsync,
    ODirect,
    SyncFileRange,
    FsyncDirectory,
}

impl SyncCall {
    pub const ALL: [SyncCall; 8] = [
        SyncCall::Write,
        SyncCall::Fsync,
        SyncCall::Fdatasync,
        SyncCall::OSync,
        SyncCall::ODsync,
        SyncCall::ODirect,
        SyncCall::SyncFileRange,
        SyncCall::FsyncDirectory,
    ];

    pub fn url_name(self) -> &'static str {
        match self {
            SyncCall::Write => "write",
            SyncCall::Fsync => "fsync",
            SyncCall::Fdatasync => "fdatasync",
            SyncCall::OSync => "o_sync",
            SyncCall::ODsync => "o_dsync",
            SyncCall::ODirect => "o_direct",
            SyncCall::SyncFileRange => "sync_file_range",
            SyncCall::FsyncDirectory => "fsync_dir",
        }
    }

    pub fn from_url_name(name: &str) -> Option<SyncCall> {
        SyncCall::ALL.into_iter().find(|call| call.url_name() == name)
    }
}

/// How a page engine protects itself against torn pages (Part 9): the core's.
pub use walab_core::pages::engine::Protection as PageProtection;

/// The number of Parts in the lab: 0 to 14 (13 and 14, the WAL with no local disk, are
/// listed before 12).
pub const PART_COUNT: u8 = 15;

/// Everything a URL can say about the view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabParams {
    pub part: u8,
    pub scenario: Scenario,
    pub sync_latency: Nanos,
    pub load_per_second: u64,
    pub policy: PolicyKind,
    pub window: Nanos,
    pub quorum_w: u8,
    /// Part 10: the followers lost (bit i for replica i: 2 = B, 4 = C); `lost=b,c`.
    pub lost_followers: u8,
    pub unit_bytes: u32,
    pub seed: u64,
    /// The instant the instructor pulls the power, if one is chosen.
    pub cut: Option<Nanos>,
    pub fault: Fault,
    pub handling: Handling,
    /// Part 8: a change-data-capture reader stuck at this seq.
    pub cdc_confirmed_seq: Option<u64>,
    pub protection: PageProtection,
    /// Branch E1: the log batch whose sync returns EIO (B11 on the page).
    pub eio_batch: u64,
    /// Parts 13 and 14 (the `r...` parameters).
    pub remote: crate::remote_params::RemoteParams,
    /// Part 2: the call its figure runs on a record.
    pub call: SyncCall,
    /// Presenter mode: large type, the figure and its controls, no prose.
    pub present: bool,
    /// The student's committed prediction for this view (a count of writes or segments).
    pub predict: Option<u32>,
    /// The student asked to see the answer without predicting.
    pub reveal: bool,
    /// Part 13: the `walab serve` whose live feed the page watches, an `http://` or
    /// `https://` address (checked by [`parse_server`]).
    pub server: Option<String>,
}

impl LabParams {
    /// Whether the answer to this view's prediction may be shown: only once the student
    /// has committed a prediction or asked to see it.
    pub fn answer_shown(&self) -> bool {
        self.predict.is_some() || self.reveal
    }

    /// A new question: the prediction and the revealed answer are forgotten.
    pub fn forget_answer(&mut self) {
        self.predict = None;
        self.reveal = false;
    }

    /// The parameters a link to Part `part` names by leaving them out: the defaults, but
    /// Part 3 opens on its lesson, a failing log sync (E1), and Part 8 on a reader
    /// pinning segments (a CDC reader stuck at seq 10). `fault=none` and `cdc=none` ask
    /// for the plain run.
    pub fn defaults_for(part: u8) -> LabParams {
        let mut params = LabParams { part, ..LabParams::default() };
        match part {
            3 => params.fault = Fault::LogSync,
            7 => params.seed = PART_7_TORN_SEED,
            8 => params.cdc_confirmed_seq = Some(PART_8_READER_SEQ),
            _ => {}
        }
        params
    }

    /// Puts the Part-dependent parameters back to Part `part`'s own (going to another Part).
    pub fn part_defaults(&mut self, part: u8) {
        let defaults = LabParams::defaults_for(part);
        self.fault = defaults.fault;
        self.cdc_confirmed_seq = defaults.cdc_confirmed_seq;
        self.seed = defaults.seed;
    }

    /// Whether this Part has a power button (and so takes `cut=` and the `p` key).
    pub fn has_power(&self) -> bool {
        POWER_PARTS.contains(&self.part)
    }
}

/// Part 7's seed when the link names none: at the lesson's cut (13.5 ms, 32-byte units) its
/// sample lands units 1 and 2 of B14's sync and not unit 3, the textbook torn record
/// (`model::torn`'s tests check it), so a student who pulls the power there sees the tear.
pub const PART_7_TORN_SEED: u64 = 9;

/// The seq Part 8's change-data-capture reader is stuck at when the link names none.
pub const PART_8_READER_SEQ: u64 = 10;

/// The Parts with a power button.
pub const POWER_PARTS: [u8; 5] = [3, 4, 6, 7, 8];

/// The largest prediction the page accepts (the tiny store has 24 writes).
pub const PREDICT_MAX: u32 = 24;

/// "Parts 3, 4, 6, 7 and 8".
pub fn power_parts_text() -> String {
    let names: Vec<String> = POWER_PARTS.iter().map(u8::to_string).collect();
    let (last, rest) = names.split_last().expect("some Part has power");
    format!("Parts {} and {last}", rest.join(", "))
}

impl Default for LabParams {
    fn default() -> Self {
        LabParams {
            part: 0,
            scenario: Scenario::Tiny,
            sync_latency: Nanos::from_millis(1),
            load_per_second: 100_000,
            policy: PolicyKind::Group,
            window: Nanos::from_millis(2),
            quorum_w: 2,
            lost_followers: 0,
            unit_bytes: 32,
            seed: 1,
            cut: None,
            fault: Fault::None,
            handling: Handling::Right,
            cdc_confirmed_seq: None,
            protection: PageProtection::FullPageImages,
            eio_batch: 11,
            remote: Default::default(),
            call: SyncCall::Fdatasync,
            present: false,
            predict: None,
            reveal: false,
            server: None,
        }
    }
}

/// The bounds each parameter is checked against.
pub const SYNC_LATENCY_MAX: Nanos = Nanos::from_millis(100);
pub const SYNC_LATENCY_MIN: Nanos = Nanos::from_micros(10);
pub const LOAD_PER_SECOND_MAX: u64 = 1_000_000;
pub const WINDOW_MAX: Nanos = Nanos::from_millis(100);
pub const CUT_MAX: Nanos = Nanos::from_millis(10_000);
pub const UNIT_BYTES_ALLOWED: [u32; 3] = [32, 512, 4096];

/// A query parameter the page could not use, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UrlProblem {
    pub param: String,
    pub value: String,
    pub reason: String,
}

impl std::fmt::Display for UrlProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={}: {}", shorten(&self.param), shorten(&self.value), self.reason)
    }
}

/// A value longer than a line is shown by its start and its length, so a pasted
/// 3,000-character value cannot bury the message.
fn shorten(text: &str) -> String {
    const SHOWN_CHARS_MAX: usize = 40;
    let count = text.chars().count();
    if count <= SHOWN_CHARS_MAX {
        return text.to_string();
    }
    let start: String = text.chars().take(SHOWN_CHARS_MAX).collect();
    format!("{start}… ({count} characters)")
}

/// A parameter's name as the CLI says it, for the page's earlier names.
fn one_name(name: &str) -> &str {
    match name {
        "handling" => "on_sync_error",
        "eio" => "log_sync_fails",
        name => name,
    }
}

/// Parses a query string (with or without the leading `?`). Unknown parameters and bad
/// values are reported and replaced by defaults; the result is always a usable view.
pub fn parse_query(query: &str) -> (LabParams, Vec<UrlProblem>) {
    let mut params = LabParams::default();
    let mut problems = Vec::new();
    let query = query.strip_prefix('?').unwrap_or(query);
    let mut named: Vec<String> = Vec::new();
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (raw_name, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
        let name = percent_decode(raw_name);
        let value = percent_decode(raw_value);
        // A parameter given twice (also once under its earlier name) is read once, the
        // first time, and the second is named.
        if let Some(first) = named.iter().find(|first| one_name(first) == one_name(&name)) {
            let was = if *first == name { String::new() } else { format!(" (first as {first})") };
            problems.push(UrlProblem { reason: format!("{name} is given more than once{was}; the lab uses the first"), param: name, value });
            continue;
        }
        if let Err(reason) = set_param(&mut params, &name, &value) {
            problems.push(UrlProblem { param: name, value, reason });
        } else {
            named.push(name);
        }
    }
    // What the link leaves out is the Part's own default.
    let defaults = LabParams::defaults_for(params.part);
    if !named.iter().any(|name| name == "fault") {
        params.fault = defaults.fault;
    }
    if !named.iter().any(|name| name == "cdc") {
        params.cdc_confirmed_seq = defaults.cdc_confirmed_seq;
    }
    if !named.iter().any(|name| name == "seed") {
        params.seed = defaults.seed;
    }
    if let Some(cut) = params.cut.filter(|_| !params.has_power()) {
        problems.push(UrlProblem {
            param: "cut".into(),
            value: format_millis(cut),
            reason: format!("Part {} has no power button; {} have one", params.part, power_parts_text()),
        });
        params.cut = None;
    }
    (params, problems)
}

/// Reads one `name=value` pair of a link into the parameters, or says why not: the one
/// place a parameter's value is checked (the page's fields use it too).
pub fn set_param(params: &mut LabParams, name: &str, value: &str) -> Result<(), String> {
    match name {
        "part" => match value.parse::<u8>() {
            Ok(part) if part < PART_COUNT => {
                params.part = part;
                Ok(())
            }
            _ => Err("not a Part; the lab has Parts 0 to 14".into()),
        },
        "scenario" => match Scenario::from_url_name(value) {
            Some(scenario) => {
                params.scenario = scenario;
                Ok(())
            }
            None => Err("not a scenario; use tiny, steady or random".into()),
        },
        "sync" => parse_millis_in(value, SYNC_LATENCY_MIN, SYNC_LATENCY_MAX)
            .map(|nanos| params.sync_latency = nanos)
            ,
        "load" => match value.parse::<u64>() {
            Ok(load) if (1..=LOAD_PER_SECOND_MAX).contains(&load) => {
                params.load_per_second = load;
                Ok(())
            }
            _ => Err("not a load; give writes per second from 1 to 1000000".into()),
        },
        "policy" => match page_policy(value) {
            Some(policy) => {
                params.policy = policy;
                Ok(())
            }
            None => Err("not a policy; use group, per-write, window or no-sync".into()),
        },
        "window" => parse_millis_in(value, Nanos::ZERO, WINDOW_MAX)
            .map(|nanos| params.window = nanos)
            ,
        "w" => match value.parse::<u8>() {
            Ok(w) if (1..=3).contains(&w) => {
                params.quorum_w = w;
                Ok(())
            }
            _ => Err("not a quorum; W is 1, 2 or 3 of the 3 replicas".into()),
        },
        "lost" => {
            let mut lost = 0;
            for name in value.split(',').filter(|name| !name.is_empty() && *name != "none") {
                lost |= match name {
                    "b" => 2,
                    "c" => 4,
                    _ => return Err("not a follower; give b, c or b,c (the leader, a, stays)".into()),
                };
            }
            params.lost_followers = lost;
            Ok(())
        }
        "unit" => match value.parse::<u32>() {
            Ok(unit) if UNIT_BYTES_ALLOWED.contains(&unit) => {
                params.unit_bytes = unit;
                Ok(())
            }
            _ => Err("not an atomic unit; use 32, 512 or 4096 bytes".into()),
        },
        "seed" => match value.parse::<u64>() {
            Ok(seed) => {
                params.seed = seed;
                Ok(())
            }
            Err(_) => Err("not a seed; give a whole number from 0 to 18446744073709551615".into()),
        },
        "fault" => match Fault::from_url_name(value) {
            Some(fault) => {
                params.fault = fault;
                Ok(())
            }
            None => Err("not a fault; use none, e1 or e2".into()),
        },
        "call" => match SyncCall::from_url_name(value) {
            Some(call) => {
                params.call = call;
                Ok(())
            }
            None => Err("not a call; use write, fsync, fdatasync, o_sync, o_dsync, o_direct, sync_file_range or fsync_dir".into()),
        },
        // `--on-sync-error`'s name; `handling` is the page's earlier one.
        "on_sync_error" | "handling" => match Handling::from_url_name(value) {
            Some(handling) => {
                params.handling = handling;
                Ok(())
            }
            None => Err("not a way to handle a failed sync; use fail-stop or retry".into()),
        },
        "protection" => match PageProtection::from_name(value) {
            Some(protection) => {
                params.protection = protection;
                Ok(())
            }
            None => Err("not a torn-page protection; use fpi, doublewrite or none".into()),
        },
        // `--log-sync-fails`'s name; `eio` is the page's earlier one.
        "log_sync_fails" | "eio" => match value.parse::<u64>() {
            Ok(batch) if (1..=24).contains(&batch) => {
                params.eio_batch = batch;
                Ok(())
            }
            _ => Err("not a batch; give the log batch whose sync fails, 1 to 24".into()),
        },
        "cdc" if value == "none" => {
            params.cdc_confirmed_seq = None;
            Ok(())
        }
        "cdc" => match value.parse::<u64>() {
            Ok(seq) if seq <= 24 => {
                params.cdc_confirmed_seq = Some(seq);
                Ok(())
            }
            _ => Err("not a confirmed seq; give 0 to 24, or none".into()),
        },
        "cut" => parse_millis_in(value, Nanos::ZERO, CUT_MAX)
            .map(|nanos| params.cut = Some(nanos))
            ,
        remote if crate::remote_params::RemoteParams::takes(remote) => {
            params.remote.parse(remote, value)
        }
        "present" => parse_flag(value).map(|on| params.present = on),
        "reveal" => parse_flag(value).map(|on| params.reveal = on),
        "predict" => match value.parse::<u32>() {
            Ok(guess) if guess <= PREDICT_MAX => {
                params.predict = Some(guess);
                Ok(())
            }
            _ => Err(format!("not a prediction; give a whole number from 0 to {PREDICT_MAX}")),
        },
        "server" => parse_server(value).map(|server| params.server = Some(server)),
        _ => Err("unknown parameter; the lab reads part, scenario, sync, load, policy, window, w, lost, unit, seed, cut, fault, on_sync_error, call, cdc, protection, log_sync_fails, predict, reveal, present, server and the r... parameters of Parts 13 and 14".into()),
    }
}

fn parse_flag(value: &str) -> Result<bool, String> {
    match value {
        "1" | "" => Ok(true),
        "0" => Ok(false),
        _ => Err("not a switch; use 1 (on) or 0 (off)".into()),
    }
}

/// Milliseconds between `min` and `max`. A number the exact parser does not take
/// (`1e9`, `-1`, `0.0000001`) is still a number: it is refused as out of range, or, when it
/// lies inside the range, taken to the nearest nanosecond.
pub fn parse_millis_in(value: &str, min: Nanos, max: Nanos) -> Result<Nanos, String> {
    let out_of_range = || format!("out of range; give {} to {} ms", format_millis(min), format_millis(max));
    let nanos = match Nanos::parse_millis(value) {
        Some(nanos) => nanos,
        None => match value.trim().parse::<f64>() {
            Ok(millis) if millis.is_finite() => {
                if millis < min.as_millis_f64() || millis > max.as_millis_f64() {
                    return Err(out_of_range());
                }
                Nanos((millis * 1e6).round() as u64)
            }
            _ => return Err("not a number of milliseconds (like 1.5)".to_string()),
        },
    };
    if nanos < min || nanos > max {
        return Err(out_of_range());
    }
    Ok(nanos)
}

/// The longest `server=` address the page takes.
pub const SERVER_ADDRESS_MAX: usize = 200;

/// A `server=` value: the address of a `walab serve`, `http://` or `https://` then a host,
/// an optional port and path, in letters, digits and `.-_~:/` only (no credentials, query
/// or fragment), without its trailing `/`.
pub fn parse_server(value: &str) -> Result<String, String> {
    let rest = value.strip_prefix("http://").or_else(|| value.strip_prefix("https://"));
    let Some(rest) = rest else { return Err("not a server address; give http://HOST:PORT of a walab serve".into()) };
    if value.len() > SERVER_ADDRESS_MAX {
        return Err(format!("longer than {SERVER_ADDRESS_MAX} characters"));
    }
    if let Some(bad) = rest.chars().find(|c| !(c.is_ascii_alphanumeric() || ".-_~:/".contains(*c))) {
        return Err(format!("{bad:?} has no place in a server address; give http://HOST:PORT"));
    }
    if rest.split(['/', ':']).next().unwrap_or("").is_empty() {
        return Err("the address names no host; give http://HOST:PORT".into());
    }
    Ok(value.trim_end_matches('/').to_string())
}

/// Writes the query string for a view: only the parameters that differ from the
/// defaults (the Part always), so links stay short.
pub fn to_query(params: &LabParams) -> String {
    let defaults = LabParams::defaults_for(params.part);
    let mut pairs = vec![format!("part={}", params.part)];
    if params.scenario != defaults.scenario {
        pairs.push(format!("scenario={}", params.scenario.url_name()));
    }
    if params.sync_latency != defaults.sync_latency {
        pairs.push(format!("sync={}", format_millis(params.sync_latency)));
    }
    if params.load_per_second != defaults.load_per_second {
        pairs.push(format!("load={}", params.load_per_second));
    }
    if params.policy != defaults.policy {
        pairs.push(format!("policy={}", params.policy.name()));
    }
    if params.window != defaults.window {
        pairs.push(format!("window={}", format_millis(params.window)));
    }
    if params.quorum_w != defaults.quorum_w {
        pairs.push(format!("w={}", params.quorum_w));
    }
    if params.lost_followers != 0 {
        let names: Vec<&str> = [(2, "b"), (4, "c")].iter().filter(|(bit, _)| params.lost_followers & bit != 0).map(|(_, name)| *name).collect();
        pairs.push(format!("lost={}", names.join(",")));
    }
    if params.unit_bytes != defaults.unit_bytes {
        pairs.push(format!("unit={}", params.unit_bytes));
    }
    if params.seed != defaults.seed {
        pairs.push(format!("seed={}", params.seed));
    }
    if let Some(cut) = params.cut {
        pairs.push(format!("cut={}", format_millis(cut)));
    }
    if params.fault != defaults.fault {
        pairs.push(format!("fault={}", params.fault.url_name()));
    }
    if params.handling != defaults.handling {
        pairs.push(format!("on_sync_error={}", params.handling.url_name()));
    }
    if params.call != defaults.call {
        pairs.push(format!("call={}", params.call.url_name()));
    }
    if params.cdc_confirmed_seq != defaults.cdc_confirmed_seq {
        pairs.push(format!("cdc={}", params.cdc_confirmed_seq.map_or("none".to_string(), |seq| seq.to_string())));
    }
    if params.eio_batch != defaults.eio_batch {
        pairs.push(format!("log_sync_fails={}", params.eio_batch));
    }
    if params.protection != defaults.protection {
        pairs.push(format!("protection={}", params.protection.name()));
    }
    pairs.extend(params.remote.to_pairs());
    if let Some(server) = &params.server {
        pairs.push(format!("server={server}"));
    }
    if let Some(guess) = params.predict {
        pairs.push(format!("predict={guess}"));
    }
    if params.reveal {
        pairs.push("reveal=1".into());
    }
    if params.present {
        pairs.push("present=1".into());
    }
    format!("?{}", pairs.join("&"))
}


fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let escaped = match (bytes[index], bytes.get(index + 1..index + 3)) {
            (b'%', Some(hex)) => std::str::from_utf8(hex).ok().and_then(|hex| u8::from_str_radix(hex, 16).ok()),
            _ => None,
        };
        match (escaped, bytes[index]) {
            (Some(byte), _) => {
                out.push(byte);
                index += 3;
            }
            (None, b'+') => {
                out.push(b' ');
                index += 1;
            }
            (None, byte) => {
                out.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_query_gives_the_defaults() {
        assert_eq!(parse_query(""), (LabParams::default(), vec![]));
        assert_eq!(parse_query("?"), (LabParams::default(), vec![]));
    }

    #[test]
    fn server_takes_only_an_http_address_and_survives_the_links_the_page_writes() {
        let (params, problems) = parse_query("part=13&server=http%3A%2F%2F127.0.0.1%3A8080%2F");
        assert_eq!((params.server.as_deref(), problems), (Some("http://127.0.0.1:8080"), vec![]));
        assert_eq!(parse_query(&to_query(&params)).0, params);
        for (value, says) in [
            ("javascript:alert(1)", "not a server address"),
            ("http://example.org/?x=1", "'?' has no place"),
            ("https://user@host", "'@' has no place"),
            ("http://", "names no host"),
            ("http://:9", "names no host"),
            ("ftp://host", "not a server address"),
        ] {
            let (params, problems) = parse_query(&format!("part=13&server={value}"));
            assert_eq!(params.server, None, "{value}");
            assert!(problems.len() == 1 && problems[0].reason.contains(says), "{value}: {problems:?}");
        }
        let long = format!("http://{}", "a".repeat(SERVER_ADDRESS_MAX));
        assert!(parse_query(&format!("server={long}")).1[0].reason.contains("longer than 200"));
    }

    #[test]
    fn a_full_link_round_trips() {
        let params = LabParams {
            part: 6,
            scenario: Scenario::Random,
            sync_latency: Nanos::from_micros(1_500),
            load_per_second: 2_000,
            policy: PolicyKind::Window,
            window: Nanos::from_micros(500),
            quorum_w: 3,
            lost_followers: 4,
            unit_bytes: 4096,
            seed: 42,
            cut: Some(Nanos(13_500_000)),
            fault: Fault::LogSync,
            handling: Handling::Wrong,
            cdc_confirmed_seq: Some(10),
            protection: PageProtection::Doublewrite,
            eio_batch: 9,
            remote: Default::default(),
            call: SyncCall::ODirect,
            present: true,
            predict: Some(17),
            reveal: true,
            server: Some("http://127.0.0.1:8080".into()),
        };
        let query = to_query(&params);
        assert_eq!(query, "?part=6&scenario=random&sync=1.5&load=2000&policy=window&window=0.5&w=3&lost=c&unit=4096&seed=42&cut=13.5&fault=e1&on_sync_error=retry&call=o_direct&cdc=10&log_sync_fails=9&protection=doublewrite&server=http://127.0.0.1:8080&predict=17&reveal=1&present=1");
        assert_eq!(parse_query(&query), (params, vec![]));
    }

    #[test]
    fn the_failed_sync_reads_the_clis_names_and_its_earlier_ones() {
        // `walab sim power-cut --log-sync-fails 9 --on-sync-error retry` and the page say
        // it with the same words; links written before still open the same view.
        let (now, problems) = parse_query("?part=3&fault=e1&on_sync_error=retry&log_sync_fails=9");
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!((now.handling, now.eio_batch), (Handling::Wrong, 9));
        assert_eq!(parse_query("?part=3&fault=e1&handling=wrong&eio=9"), (now.clone(), vec![]));
        assert_eq!(parse_query("?part=3&fault=e1&handling=retry&log_sync_fails=9"), (now, vec![]));
        assert_eq!(parse_query("?handling=fail-stop").0.handling, Handling::Right);
        assert_eq!(parse_query("?handling=right").0.handling, Handling::Right);
        assert_eq!(parse_query("?handling=maybe").1[0].to_string(), "handling=maybe: not a way to handle a failed sync; use fail-stop or retry");
    }

    #[test]
    fn a_parameter_under_its_old_and_new_names_is_a_repeat() {
        let (params, problems) = parse_query("?part=3&handling=retry&on_sync_error=fail-stop&log_sync_fails=9&eio=4");
        assert_eq!((params.handling, params.eio_batch), (Handling::Wrong, 9));
        let said: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(said, [
            "on_sync_error=fail-stop: on_sync_error is given more than once (first as handling); the lab uses the first",
            "eio=4: eio is given more than once (first as log_sync_fails); the lab uses the first",
        ]);
    }

    #[test]
    fn bad_values_are_named_and_replaced_by_defaults() {
        let (params, problems) = parse_query("?part=99&sync=fast&policy=yolo&cut=-1&w=5&bogus=1&part=5");
        assert_eq!(params.part, 5);
        assert_eq!(params.sync_latency, LabParams::default().sync_latency);
        assert_eq!(params.cut, None);
        let named: Vec<String> = problems.iter().map(|problem| problem.param.clone()).collect();
        assert_eq!(named, ["part", "sync", "policy", "cut", "w", "bogus"]);
        assert_eq!(problems[1].to_string(), "sync=fast: not a number of milliseconds (like 1.5)");
    }

    #[test]
    fn out_of_range_milliseconds_say_the_range() {
        let (_, problems) = parse_query("sync=500");
        assert_eq!(problems[0].reason, "out of range; give 0.01 to 100 ms");
    }

    #[test]
    fn a_number_out_of_range_is_not_called_not_a_number() {
        let (params, problems) = parse_query("part=6&cut=1e9");
        assert_eq!(params.cut, None);
        assert_eq!(problems[0].reason, "out of range; give 0 to 10000 ms");
        let (_, problems) = parse_query("part=6&cut=-1");
        assert_eq!(problems[0].reason, "out of range; give 0 to 10000 ms");
        let (params, problems) = parse_query("part=6&cut=1.35e1");
        assert_eq!((params.cut, problems.len()), (Some(Nanos(13_500_000)), 0));
        let (_, problems) = parse_query("part=6&cut=soon");
        assert_eq!(problems[0].reason, "not a number of milliseconds (like 1.5)");
    }

    #[test]
    fn a_cut_in_a_part_without_power_is_refused_by_name() {
        let (params, problems) = parse_query("part=2&cut=4");
        assert_eq!(params.cut, None);
        assert_eq!(problems[0].to_string(), "cut=4: Part 2 has no power button; Parts 3, 4, 6, 7 and 8 have one");
        assert_eq!(parse_query("cut=4&part=7").0.cut, Some(Nanos::from_millis(4)), "order does not matter");
    }

    #[test]
    fn parts_3_and_8_open_on_their_lessons_unless_the_link_says_none() {
        assert_eq!(parse_query("?part=3").0.fault, Fault::LogSync);
        assert_eq!(to_query(&parse_query("?part=3").0), "?part=3");
        let plain = parse_query("?part=3&fault=none").0;
        assert_eq!(plain.fault, Fault::None);
        assert_eq!(to_query(&plain), "?part=3&fault=none");
        assert_eq!(parse_query("?part=6").0.fault, Fault::None);
        assert_eq!(parse_query("?part=8").0.cdc_confirmed_seq, Some(PART_8_READER_SEQ));
        let without = parse_query("?part=8&cdc=none");
        assert_eq!((without.0.cdc_confirmed_seq, without.1), (None, vec![]));
        assert_eq!(to_query(&without.0), "?part=8&cdc=none");
        assert_eq!(to_query(&parse_query("?part=8&cdc=4").0), "?part=8&cdc=4");
        assert_eq!(parse_query("?part=7").0.cdc_confirmed_seq, None);
    }

    #[test]
    fn predictions_and_presenter_mode_are_in_the_link() {
        let (params, problems) = parse_query("part=7&cut=13.5&predict=22&present=1");
        assert!(problems.is_empty());
        assert_eq!((params.predict, params.reveal, params.present), (Some(22), false, true));
        assert!(params.answer_shown());
        assert!(!parse_query("part=7&cut=13.5").0.answer_shown());
        let (_, problems) = parse_query("predict=99&reveal=yes");
        assert_eq!(problems[0].reason, "not a prediction; give a whole number from 0 to 24");
        assert_eq!(problems[1].reason, "not a switch; use 1 (on) or 0 (off)");
    }

    #[test]
    fn a_long_value_is_shown_by_its_start_and_length() {
        let long = "x".repeat(3_000);
        let (_, problems) = parse_query(&format!("seed={long}"));
        let shown = problems[0].to_string();
        assert!(shown.len() < 200, "{shown}");
        assert!(shown.starts_with(&format!("seed={}… (3000 characters)", "x".repeat(40))), "{shown}");
    }

    #[test]
    fn percent_escapes_decode_and_stray_percents_survive() {
        assert_eq!(percent_decode("a%20b+c"), "a b c");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz"), "%zz");
    }

    #[test]
    fn millis_format_exactly() {
        assert_eq!(format_millis(Nanos(13_500_000)), "13.5");
        assert_eq!(format_millis(Nanos(1_000_000)), "1");
        assert_eq!(format_millis(Nanos(25_000)), "0.025");
    }
}
