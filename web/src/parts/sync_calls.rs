//! Part 2: what fsync and its relatives guarantee, and what a sync costs.

use std::rc::Rc;

use yew::prelude::*;

use super::{markup, ChapterProps, source};
use crate::model::chain::{survives, Failure, Stage};
use crate::model::journey::{power_loss_after, CallAt, JourneyModel};
use crate::model::Model;
use crate::figures::sync_journey::{sync_journey, SyncJourneyProps};
use crate::layout::Scene;
use crate::player::{Clock, player, PlayerProps};
use crate::state::{LabAction, Setting};
use crate::url_state::{format_millis, SyncCall};
use crate::figures::call_path::CallPath;

/// wal-1's four writes on their way from the process to the media, one event per step,
/// drawn from the tiny store's run.
fn journey(props: &ChapterProps) -> Html {
    let Model::Journey(model) = &*props.model.0 else { return Html::default() };
    let model = match model {
        Ok(model) => model,
        Err(error) => return html! { <p class="error">{ format!("the simulator refused the run: {error}") }</p> },
    };
    let step = model.step_at(props.player.now);
    let on_player = props.on_action.reform(LabAction::Player);
    html! {
        <Scene name="journey" title="Trace: the first writes, one event at a time"
            controls={player(&PlayerProps { state: props.player.clone(), on_action: on_player, mark_name: "event".into(), clock: Clock::Steps, caption: Some(AttrValue::from(step.caption.clone())), ..PlayerProps::default() })}
            drawn={{
                let journey = SyncJourneyProps { step: Rc::new(step.clone()), unit_bytes: model.unit_bytes, segment_bytes: model.segment_bytes,
                    records: Rc::new(model.records.clone()) };
                Callback::from(move |room| sync_journey(&journey, room))
            }}>
            { markup(JOURNEY) }
        </Scene>
    }
}

/// The journey's evidence for a call's power-loss cell: what the run looked like right
/// after write() and right after fdatasync() returned.
fn journey_evidence(model: Option<&JourneyModel>, call: &str) -> Option<String> {
    let model = model?;
    let (index, step) = match call {
        "write()" => model.find(|step| step.call == CallAt::Write)?,
        "fdatasync(fd)" => model.find(|step| step.call == CallAt::SyncReturned)?,
        _ => return None,
    };
    let on_media: Vec<String> = step
        .units
        .iter()
        .filter(|unit| !unit.media_records.is_empty())
        .map(|unit| unit.unit.to_string())
        .collect();
    Some(if on_media.is_empty() {
        format!(" (step {index} above: every unit of wal-1 is still zeros on the media)")
    } else {
        format!(" (step {index} above: unit {} holds records on the media)", on_media.join(", "))
    })
}

const FSYNC: &str = "https://man7.org/linux/man-pages/man2/fsync.2.html";
const OPEN: &str = "https://man7.org/linux/man-pages/man2/open.2.html";
const WRITE: &str = "https://man7.org/linux/man-pages/man2/write.2.html";
const SYNC_FILE_RANGE: &str = "https://man7.org/linux/man-pages/man2/sync_file_range.2.html";

/// One row of the table of sync calls.
struct Call {
    kind: SyncCall,
    call: &'static str,
    /// Who returns, in the outcome's sentence ("{returns} returns when {waits_for}.").
    returns: &'static str,
    /// What a call makes durable: the record, or (a directory's fsync) the file's name.
    carries: &'static str,
    /// A clause: what is true when it returns.
    waits_for: &'static str,
    drive_cache: &'static str,
    metadata: &'static str,
    /// Where the bytes it was given are when it returns.
    leaves_bytes_in: Stage,
    source: (&'static str, &'static str),
}

const CALLS: [Call; 8] = [
    Call {
        kind: SyncCall::Write,
        call: "write()",
        returns: "write()",
        carries: "the record",
        waits_for: "its bytes are copied into the page cache",
        drive_cache: "no",
        metadata: "no",
        leaves_bytes_in: Stage::PageCache,
        source: ("write(2)", WRITE),
    },
    Call {
        kind: SyncCall::Fsync,
        call: "fsync(fd)",
        returns: "fsync(fd)",
        carries: "the record",
        waits_for: "the file's changed data and metadata are on the device",
        drive_cache: "flushed (written through or flushed if the drive has one)",
        metadata: "all of the file's (size, times), not its directory entry",
        leaves_bytes_in: Stage::Media,
        source: ("fsync(2)", FSYNC),
    },
    Call {
        kind: SyncCall::Fdatasync,
        call: "fdatasync(fd)",
        returns: "fdatasync(fd)",
        carries: "the record",
        waits_for: "the file's data, and only the metadata needed to read it back (a new size), are on the device",
        drive_cache: "flushed",
        metadata: "only what retrieval needs; times are skipped",
        leaves_bytes_in: Stage::Media,
        source: ("fsync(2)", FSYNC),
    },
    Call {
        kind: SyncCall::OSync,
        call: "open(..., O_SYNC)",
        returns: "each write() to a file opened with O_SYNC",
        carries: "the record",
        waits_for: "its bytes and the file's metadata are on the device, as if fsync() had followed it",
        drive_cache: "flushed",
        metadata: "all",
        leaves_bytes_in: Stage::Media,
        source: ("open(2)", OPEN),
    },
    Call {
        kind: SyncCall::ODsync,
        call: "open(..., O_DSYNC)",
        returns: "each write() to a file opened with O_DSYNC",
        carries: "the record",
        waits_for: "its bytes, and the metadata needed to read them back, are on the device, as if fdatasync() had followed it",
        drive_cache: "flushed",
        metadata: "only what retrieval needs",
        leaves_bytes_in: Stage::Media,
        source: ("open(2)", OPEN),
    },
    Call {
        kind: SyncCall::ODirect,
        call: "open(..., O_DIRECT)",
        returns: "each write() to a file opened with O_DIRECT",
        carries: "the record",
        waits_for: "its bytes have gone from the process's buffer to the drive, past the page cache where it can (they may still sit in the drive's cache)",
        drive_cache: "no: the bytes may sit in the drive's cache",
        metadata: "no",
        leaves_bytes_in: Stage::DeviceCache,
        source: ("open(2) NOTES", OPEN),
    },
    Call {
        kind: SyncCall::SyncFileRange,
        call: "sync_file_range()",
        returns: "sync_file_range()",
        carries: "the record",
        waits_for: "write-back of the byte range has started, or finished, as its flags ask: no metadata, no flush of the drive's cache",
        drive_cache: "no",
        metadata: "no (not even a new size)",
        leaves_bytes_in: Stage::DeviceCache,
        source: ("sync_file_range(2)", SYNC_FILE_RANGE),
    },
    Call {
        kind: SyncCall::FsyncDirectory,
        call: "fsync(directory fd)",
        returns: "fsync(directory fd)",
        carries: "the file's name",
        waits_for: "the directory's entries (a new file's name, a rename) are on the device; the file's data needs its own fsync",
        drive_cache: "flushed",
        metadata: "the directory's",
        leaves_bytes_in: Stage::Media,
        source: ("fsync(2) NOTES", FSYNC),
    },
];

/// Pick a call and run it on a record: the record travels down to where the call leaves
/// it, and the outcome says what a power loss right after it returns keeps.
fn call_scene(props: &ChapterProps) -> Html {
    let chosen = CALLS.iter().find(|call| call.kind == props.params.call).unwrap_or(&CALLS[2]);
    let buttons = CALLS.iter().map(|call| {
        let kind = call.kind;
        let pressed = kind == chosen.kind;
        html! {
            <button class={classes!("call", pressed.then_some("primary"))} data-call={kind.url_name()} aria-pressed={pressed.to_string()}
                onclick={props.on_action.reform(move |_| LabAction::Set(Setting::Call(kind)))}><code>{ call.call }</code></button>
        }
    });
    let survives_power_loss = survives(chosen.leaves_bytes_in, Failure::PowerLoss);
    html! {
        <Scene name="calls" title="Run a call on a record"
            controls={html! { <div class="call-buttons" role="group" aria-label="the call to run">{ for buttons }</div> }}
            figure={html! { <CallPath call={chosen.call} carries={chosen.carries} url_name={chosen.kind.url_name()} leaves={chosen.leaves_bytes_in} /> }}
            outcome={html! {
                <div class="call-outcome" aria-live="polite" data-call={chosen.kind.url_name()}>
                    <p class="returns-when">{ format!("{} returns when {}.", chosen.returns, chosen.waits_for) }</p>
                    <p class={classes!("power-loss-after", if survives_power_loss { "ok" } else { "danger" })}>
                        { if chosen.carries == "the record" {
                            format!("A power loss right after it returns: {}.", power_loss_after(chosen.leaves_bytes_in))
                        } else {
                            format!("A power loss right after it returns: {} is kept, on the media; the file's data only if it was synced too.", chosen.carries)
                        } }</p>
                    <p class="note">{ format!("Metadata: {}. ", chosen.metadata) }{ source(chosen.source.0, chosen.source.1) }</p>
                </div>
            }}>
            { markup(CALLS_PROSE) }
        </Scene>
    }
}

#[component]
pub fn SyncChapter(props: &ChapterProps) -> Html {
    let model = match &*props.model.0 {
        Model::Journey(Ok(model)) => Some(model),
        _ => None,
    };
    let rows = CALLS.iter().map(|call| {
        let survives_power_loss = survives(call.leaves_bytes_in, Failure::PowerLoss);
        let after = match call.carries {
            "the record" => format!("{}{}", power_loss_after(call.leaves_bytes_in), journey_evidence(model, call.call).unwrap_or_default()),
            name => format!("kept: {name} is on the media; the data only if synced too"),
        };
        html! {
            <tr data-survives={survives_power_loss.to_string()}>
                <td data-label="call"><code>{ call.call }</code></td>
                <td data-label="returns when">{ call.waits_for }</td>
                <td data-label="drive's cache">{ call.drive_cache }</td>
                <td data-label="metadata">{ call.metadata }</td>
                <td class={classes!("power-loss-after", if survives_power_loss { "ok" } else { "danger" })} data-label="power loss after it">{ after }</td>
                <td data-label="source">{ source(call.source.0, call.source.1) }</td>
            </tr>
        }
    });
    let latency = props.params.sync_latency;
    let ceiling = 1e9 / latency.0.max(1) as f64;
    html! {
        <>
        { markup(OPENING) }
        { journey(props) }
        { call_scene(props) }
        { markup("<h3>The calls</h3>") }
        <table class="sync-calls stack">
            <thead><tr><th>{ "call" }</th><th>{ "returns when" }</th><th>{ "drive's volatile cache" }</th><th>{ "metadata" }</th><th>{ "a power loss right after it returns" }</th><th>{ "source" }</th></tr></thead>
            <tbody>{ for rows }</tbody>
        </table>
        { markup(NOTES) }
        { markup("<h3>What a sync costs</h3>") }
        <div class="prose">
            <p>{ format!("One log runs one sync at a time and a sync takes L, so it completes at most 1 ÷ L syncs a \
                  second: {:.0} at L = {} ms (Part 5 shows how group commit shares each one). On EBS each sync is \
                  also an I/O against the volume's IOPS budget; AWS counts an SSD I/O of up to 256 KiB as one and \
                  merges small sequential I/Os where it can.", ceiling, format_millis(latency)) }
               { source("AWS: EBS I/O characteristics", "https://docs.aws.amazon.com/ebs/latest/userguide/ebs-io-characteristics.html") }</p>
        </div>
        { markup(MEASURE) }
        </>
    }
}

/// The notes after the table of calls: direct I/O, what engines use, the drive's cache, the log's files.
const NOTES: &str = "<details class=\"more\"><summary>More on the calls: direct I/O, what engines use, the drive&#39;s own cache, creating and growing the log</summary><div class=\"prose\"><p>O_DIRECT is about caching, not durability: it skips the kernel's cache, but the drive may still hold the bytes in its own, and the file's metadata may still be pending. An engine using direct I/O still needs fdatasync or O_DSYNC. sync_file_range's man page itself warns that it gives no durability: it neither flushes the drive's cache nor writes the metadata. <a class=\"source\" href=\"https://man7.org/linux/man-pages/man2/open.2.html\" target=\"_blank\" rel=\"noopener\">[open(2)]</a><a class=\"source\" href=\"https://man7.org/linux/man-pages/man2/sync_file_range.2.html\" target=\"_blank\" rel=\"noopener\">[sync_file_range(2)]</a></p><p>What engines use: PostgreSQL's wal_sync_method defaults to fdatasync on Linux; RocksDB issues fdatasync unless use_fsync is set. <a class=\"source\" href=\"https://www.postgresql.org/docs/current/runtime-config-wal.html#GUC-WAL-SYNC-METHOD\" target=\"_blank\" rel=\"noopener\">[PostgreSQL: wal_sync_method]</a><a class=\"source\" href=\"https://github.com/facebook/rocksdb/blob/main/include/rocksdb/options.h\" target=\"_blank\" rel=\"noopener\">[RocksDB options.h: use_fsync]</a></p></div><h3>The drive's own cache</h3><div class=\"prose\"><p>A drive with a volatile write cache can report a write as done while the bytes are only in its RAM. So a sync has two jobs: get the dirty pages to the drive, then make the drive put them on stable media (a cache flush, or writes marked to bypass the cache). Linux shows what it believes about a device in /sys/block/&lt;dev&gt;/queue/write_cache: \"write back\" means a volatile cache that needs flushing, \"write through\" means none. <a class=\"source\" href=\"https://www.kernel.org/doc/Documentation/ABI/stable/sysfs-block\" target=\"_blank\" rel=\"noopener\">[Linux sysfs-block ABI]</a></p><p>Every promise above assumes each layer honours the flush: the file system, any hypervisor, any RAID controller, the drive. A layer that acknowledges a flush without doing it breaks every promise above it silently, until a power loss. The only test is to pull the power under load on the stack you run and count the acknowledged writes afterwards.</p></div><h3>Creating and growing the log</h3><ul class=\"prose\"><li>A new segment's name lives in its directory, and fsync of the file does not make the directory entry durable: after creating or renaming a segment, sync the directory too. <a class=\"source\" href=\"https://man7.org/linux/man-pages/man2/fsync.2.html\" target=\"_blank\" rel=\"noopener\">[fsync(2) NOTES]</a></li><li>An append that extends a file changes its size, so each such sync also writes metadata. Engines give the log its space ahead of time: PostgreSQL fills each new 16 MB segment with zeros and recycles old ones; RocksDB can recycle log files so that fdatasync has no inode update to make. A bare fallocate is usually not enough, because the reserved extents start out unwritten and the first write into each one still changes metadata. <a class=\"source\" href=\"https://www.postgresql.org/docs/current/wal-configuration.html\" target=\"_blank\" rel=\"noopener\">[PostgreSQL: WAL configuration]</a><a class=\"source\" href=\"https://github.com/facebook/rocksdb/blob/main/include/rocksdb/options.h\" target=\"_blank\" rel=\"noopener\">[RocksDB options.h: recycle_log_file_num]</a></li></ul></details>";

/// How to measure L on a real volume.
const MEASURE: &str = "<h3>Measure, don't assume</h3><div class=\"prose\"><p>Run these on the volume and instance type you will use, and watch the engine's own sync latency in production:</p></div><pre class=\"commands\"><code>fio --name=walsync --filename=/data/fio.test --size=256m --rw=write --bs=4k --ioengine=sync --fdatasync=1\npg_test_fsync -f /data/pg_test_fsync.out\ncat /sys/block/nvme1n1/queue/write_cache\nwalab fsync-test --dir /data      # walab's own: every sync method, percentiles, a latency file for the lab</code></pre><details class=\"more\"><summary>What each command prints</summary><ul class=\"prose\"><li>fio writes 4 KiB blocks and calls fdatasync after each; its report has a \"sync\" latency line (min, max, average, deviation, in microseconds) and a table of sync latency percentiles. The percentiles from the 50th to the 99.9th are your L. <a class=\"source\" href=\"https://fio.readthedocs.io/en/latest/fio_doc.html\" target=\"_blank\" rel=\"noopener\">[fio documentation: fdatasync]</a></li><li>pg_test_fsync times every sync method PostgreSQL can use (open_datasync, fdatasync, fsync, fsync_writethrough, open_sync) with one and with two 8 kB writes per sync, and prints operations per second and microseconds per operation for each. <a class=\"source\" href=\"https://www.postgresql.org/docs/current/pgtestfsync.html\" target=\"_blank\" rel=\"noopener\">[PostgreSQL: pg_test_fsync]</a></li><li>The last line prints \"write back\" or \"write through\": whether the kernel believes the device has a volatile cache to flush.</li></ul></details>";

/// Beside the journey of wal-1's first writes.
const JOURNEY: &str = "<div class=\"prose\"><p>When the tiny store opens, it creates wal-1 filled with zeros and syncs it and its directory. Then the writes arrive.</p><p>Step through: each record is built in the process, copied into the page cache by write() (its units turn dirty), sent to the drive by fdatasync(), put on the media by the drive's cache flush, and only then acknowledged.</p><p>Each step is one event of the run (the sync takes 1.0 ms; write() takes no time here). The page opens just after the first write(): the record is in the page cache, and a power loss now would lose it.</p></div>";

/// Beside the call run on a record.
const CALLS_PROSE: &str = "<div class=\"prose\"><p>\"We fsync the log\" hides a choice between several calls, each promising something different. Pick one and run it on a record: the record goes as far as the call waits for, and no further.</p><p>Only the calls that wait for the drive's cache flush leave the bytes on the stable media, the one place a power loss cannot wipe. The table below puts them side by side.</p></div>";

/// Part 2's opening.
const OPENING: &str = "<div class=\"prose\"><p>A write() is not a promise: the bytes it copies sit in memory until something pushes them to the device, and a cache inside the drive can undo even that without an error. The table of calls below says what each call waits for, from the Linux man pages.</p></div>";
