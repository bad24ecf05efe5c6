//! `walab sim redo`: Part 9's branch B, a page engine crashed mid write-back and
//! recovered with full-page images, a doublewrite buffer, or neither.

use std::io::Write;
use std::process::ExitCode;

use clap::ValueEnum;
use serde::Serialize;
use walab_core::pages::branch_b::{self, BranchB, CutPoint};
use walab_core::pages::engine::{PageEvent, PowerBudget};
use walab_core::pages::sqlite_wal;
use walab_core::pages::page::PageReadError;
use walab_core::pages::{Page, PageGeometry, PageNo, Protection};

use crate::cli_error::CliError;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The scenario (branch B of the tiny store).
    #[arg(long, value_enum, default_value_t = Scenario::TinyStore)]
    scenario: Scenario,
    /// aries: change records, pageLSN and REDO (PostgreSQL, InnoDB); sqlite-wal: SQLite's
    /// WAL mode, whose log holds whole pages.
    #[arg(long, value_enum, default_value_t = EngineArg::Aries)]
    engine: EngineArg,
    /// How pages are protected against a torn write-back (aries engine).
    #[arg(long, default_value = "fpi", value_parser = protection)]
    protection: Protection,
    /// Cut the power during the step after this write (1 to 8; 8 = P1's write-back).
    #[arg(long, default_value_t = 8)]
    cut_after_write: u64,
    /// Sector writes of that step that reach the media (default: half the first page).
    #[arg(long)]
    cut_sectors: Option<usize>,
    /// Page size in bytes (64 = branch B's tiny pages; 8192 = PostgreSQL's).
    #[arg(long, default_value_t = 64)]
    page_bytes: usize,
    /// Sector (atomic unit) size in bytes.
    #[arg(long, default_value_t = 32)]
    sector_bytes: usize,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Scenario {
    TinyStore,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum EngineArg {
    Aries,
    SqliteWal,
}

/// `--protection`'s parser: the core's names (fpi, doublewrite, none).
fn protection(text: &str) -> Result<Protection, crate::cli_error::BadValue> {
    Protection::from_name(text).ok_or_else(|| {
        let names: Vec<&str> = Protection::ALL.iter().map(|protection| protection.name()).collect();
        crate::cli_error::BadValue(format!("unknown protection '{text}' (expected {})", crate::cli_error::one_of(&names)))
    })
}

#[derive(Serialize)]
struct PageJson {
    page: PageNo,
    ok: bool,
    /// For a torn page: the pageLSN its header claims (not to be trusted).
    #[serde(skip_serializing_if = "Option::is_none")]
    claimed_page_lsn: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    page_lsn: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    entries: Option<Vec<(String, String)>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<PageReadError>,
}

#[derive(Serialize)]
struct RedoJson<'a> {
    scenario: &'static str,
    protection: Protection,
    geometry: PageGeometry,
    cut: CutPoint,
    run: &'a [PageEvent],
    pages_at_cut: Vec<PageJson>,
    recovery: &'a [PageEvent],
    pages_after: Vec<PageJson>,
    recovered_everything: bool,
    damaged: &'a [PageNo],
}

fn page_json(branch: &BranchB, page_no: PageNo, page: &Result<Page, PageReadError>, raw: Option<&[u8]>) -> PageJson {
    match page {
        Ok(page) => PageJson {
            page: page_no,
            ok: true,
            claimed_page_lsn: None,
            page_lsn: Some(page.page_lsn),
            entries: Some(page.entries.iter().map(|(key, value)| (key.clone(), value.clone())).collect()),
            error: None,
        },
        Err(error) => {
            let _ = branch;
            PageJson { page: page_no, ok: false, claimed_page_lsn: raw.and_then(Page::claimed_page_lsn), page_lsn: None, entries: None, error: Some(*error) }
        }
    }
}

fn page_text(page: &Result<Page, PageReadError>, raw: Option<&[u8]>) -> String {
    match page {
        Ok(page) => format!("pageLSN {}: {}", page.page_lsn, page.describe_entries()),
        Err(PageReadError::Checksum) => match raw.and_then(Page::claimed_page_lsn) {
            Some(claimed) => format!("TORN: checksum fails (its header claims pageLSN {claimed})"),
            None => "TORN: checksum fails".to_string(),
        },
        Err(PageReadError::Malformed) => "malformed".to_string(),
    }
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let Scenario::TinyStore = args.scenario;
    let geometry = PageGeometry::new(args.page_bytes, args.sector_bytes).map_err(|error| CliError::usage(format!("--page-bytes/--sector-bytes: {error}")))?;
    if args.engine == EngineArg::SqliteWal {
        return run_sqlite_wal(&args, geometry);
    }
    let protection = args.protection;
    let cut = CutPoint { after_write: args.cut_after_write, sector_writes: args.cut_sectors };
    let branch = branch_b::run(geometry, protection, cut).map_err(|error| match error {
        branch_b::BranchBError::CutOutOfRange { .. } => CliError::usage(format!("--cut-after-write: {error}")),
        other => CliError::usage(format!("redo: {other}")),
    })?;
    let raw = |page_no: &PageNo| branch.crash.media.pages.get(page_no).map(Vec::as_slice);
    let mut out = std::io::stdout().lock();
    if args.json {
        let json = RedoJson {
            scenario: "tiny-store",
            protection,
            geometry,
            cut,
            run: &branch.crash.events,
            pages_at_cut: branch.pages_at_cut.iter().map(|(page_no, page)| page_json(&branch, *page_no, page, raw(page_no))).collect(),
            recovery: &branch.recovery.events,
            pages_after: branch.pages_after.iter().map(|(page_no, page)| page_json(&branch, *page_no, page, None)).collect(),
            recovered_everything: branch.recovered_everything(),
            damaged: &branch.recovery.damaged,
        };
        serde_json::to_writer_pretty(&mut out, &json).map_err(|error| CliError::failed(format!("stdout: {error}")))?;
        writeln!(out).ok();
        return Ok(ExitCode::SUCCESS);
    }
    let protection_name = match protection {
        Protection::FullPageImages => "full-page images",
        Protection::Doublewrite => "doublewrite buffer",
        Protection::None => "none",
    };
    writeln!(
        out,
        "branch b: tiny store writes 1-{} on P1 (order: keys) and P2 (user: keys); {}-byte pages of {} x {}-byte sectors; protection: {protection_name}",
        branch_b::LAST_WRITE,
        geometry.page_bytes,
        geometry.sectors_per_page(),
        geometry.sector_bytes
    )
    .ok();
    writeln!(out, "\nrun (the log is durable record by record; pages go back later)").ok();
    for event in &branch.crash.events {
        writeln!(out, "  {}", event.describe()).ok();
    }
    writeln!(out, "\ndata file at the power cut (redo point LSN {})", branch.crash.media.redo_lsn).ok();
    for (page_no, page) in &branch.pages_at_cut {
        writeln!(out, "  {page_no}: {}", page_text(page, raw(page_no))).ok();
    }
    writeln!(out, "\nrecovery").ok();
    for event in &branch.recovery.events {
        writeln!(out, "  {}", event.describe()).ok();
    }
    writeln!(out, "\nafter recovery").ok();
    for (page_no, page) in &branch.pages_after {
        let expected = branch.crash.expected.get(page_no);
        let verdict = match (page, expected) {
            (Ok(page), Some(expected)) if page == expected => "as before the power cut".to_string(),
            (_, Some(expected)) => format!("LOST: before the cut it held {} (pageLSN {})", expected.describe_entries(), expected.page_lsn),
            (_, None) => String::new(),
        };
        writeln!(out, "  {page_no} = {}  [{verdict}]", page_text(page, None)).ok();
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Serialize)]
struct WalJson<'a> {
    scenario: &'static str,
    engine: &'static str,
    geometry: PageGeometry,
    cut: CutPoint,
    run: &'a [sqlite_wal::WalEvent],
    recovery: &'a [sqlite_wal::WalEvent],
    pages_after: Vec<PageJson>,
    recovered_everything: bool,
}

/// The same branch in SQLite's WAL mode.
fn run_sqlite_wal(args: &Args, geometry: PageGeometry) -> Result<ExitCode, CliError> {
    let crash = sqlite_wal::crash(geometry, args.cut_after_write, args.cut_sectors).map_err(|error| match error {
        branch_b::BranchBError::CutOutOfRange { .. } => CliError::usage(format!("--cut-after-write: {error}")),
        other => CliError::usage(format!("redo: {other}")),
    })?;
    let mut media = crash.media.clone();
    let (recovery, _) = sqlite_wal::recover(&mut media, &mut PowerBudget::unlimited());
    let pages_after: Vec<(PageNo, Result<Page, PageReadError>)> = media.db.iter().map(|(no, bytes)| (*no, Page::decode(bytes))).collect();
    let recovered_everything = pages_after.iter().all(|(no, page)| crash.expected.get(no).map(|expected| page == &Ok(expected.clone())).unwrap_or(false));
    let mut out = std::io::stdout().lock();
    if args.json {
        let json = WalJson {
            scenario: "tiny-store",
            engine: "sqlite-wal",
            geometry,
            cut: CutPoint { after_write: args.cut_after_write, sector_writes: args.cut_sectors },
            run: &crash.events,
            recovery: &recovery,
            pages_after: pages_after
                .iter()
                .map(|(no, page)| match page {
                    Ok(page) => PageJson { page: *no, ok: true, claimed_page_lsn: None, page_lsn: Some(page.page_lsn), entries: Some(page.entries.iter().map(|(k, v)| (k.clone(), v.clone())).collect()), error: None },
                    Err(error) => PageJson { page: *no, ok: false, claimed_page_lsn: None, page_lsn: None, entries: None, error: Some(*error) },
                })
                .collect(),
            recovered_everything,
        };
        serde_json::to_writer_pretty(&mut out, &json).map_err(|error| CliError::failed(format!("stdout: {error}")))?;
        writeln!(out).ok();
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "branch b in sqlite's wal mode: writes 1-{} as one-page transactions, checkpoints after writes 4 and 8; {}-byte pages of {} x {}-byte sectors",
        branch_b::LAST_WRITE,
        geometry.page_bytes,
        geometry.sectors_per_page(),
        geometry.sector_bytes
    )
    .ok();
    writeln!(out, "
run (each commit frame is synced before OK; the database file changes only at checkpoints)").ok();
    for event in &crash.events {
        writeln!(out, "  {}", event.describe()).ok();
    }
    writeln!(out, "
recovery").ok();
    for event in &recovery {
        writeln!(out, "  {}", event.describe()).ok();
    }
    writeln!(out, "
after recovery").ok();
    for (page_no, page) in &pages_after {
        let verdict = match crash.expected.get(page_no) {
            Some(expected) if page == &Ok(expected.clone()) => "as before the power cut".to_string(),
            Some(expected) => format!("LOST: before the cut it held {}", expected.describe_entries()),
            None => String::new(),
        };
        writeln!(out, "  {page_no} = {}  [{verdict}]", page_text(page, None)).ok();
    }
    Ok(ExitCode::SUCCESS)
}
