//! Parts 11 and 12: AWS, the cheat card and the drills.

use yew::prelude::*;

use super::{ChapterProps, source};
use crate::model::Model;
use crate::state::LabAction;

/// A managed service and what AWS documents about when it says OK.
struct Service {
    name: &'static str,
    log: &'static str,
    ok_means: &'static str,
    source: (&'static str, &'static str),
}

const SERVICES: [Service; 6] = [
    Service {
        name: "Amazon Aurora",
        log: "the database sends only redo log records to a storage fleet that keeps six copies across three Availability Zones",
        ok_means: "a write is durable once four of the six copies have it (a 4 of 6 write quorum)",
        source: ("AWS: Aurora storage and reliability; Verbitski et al., SIGMOD 2017", "https://docs.aws.amazon.com/AmazonRDS/latest/AuroraUserGuide/Aurora.Overview.StorageReliability.html"),
    },
    Service {
        name: "Amazon RDS Multi-AZ (one standby)",
        log: "the engine's own WAL or redo log, replicated synchronously to a standby in another Availability Zone",
        ok_means: "committed on the primary and on the standby's storage",
        source: ("AWS: RDS Multi-AZ deployments", "https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/Concepts.MultiAZSingleStandby.html"),
    },
    Service {
        name: "Amazon DynamoDB",
        log: "each partition is a replication group of three replicas in different zones running Multi-Paxos over a write-ahead log",
        ok_means: "acknowledged once two of the three replicas have written the log record",
        source: ("Elhemali et al., Amazon DynamoDB, USENIX ATC 2022", "https://www.usenix.org/conference/atc22/presentation/elhemali"),
    },
    Service {
        name: "Amazon MemoryDB",
        log: "a distributed transactional log spread across Availability Zones behind the in-memory engine",
        ok_means: "a write is acknowledged after the log has committed it in multiple zones",
        source: ("AWS: MemoryDB features", "https://docs.aws.amazon.com/memorydb/latest/devguide/what-is-memorydb.html"),
    },
    Service {
        name: "Amazon S3",
        log: "none exposed; objects are stored redundantly across at least three Availability Zones (S3 Standard)",
        ok_means: "a successful PUT is durable and visible to every later read (strong read-after-write consistency)",
        source: ("AWS: S3 data protection and consistency", "https://docs.aws.amazon.com/AmazonS3/latest/userguide/DataDurability.html"),
    },
    Service {
        name: "Amazon EBS gp3 (your own engine)",
        log: "yours: the volume is replicated within one Availability Zone",
        ok_means: "a completed sync; baseline 3,000 IOPS and 125 MiB/s, more if provisioned",
        source: ("AWS: EBS General Purpose SSD volumes", "https://docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html"),
    },
];

#[component]
pub fn AwsChapter(_props: &ChapterProps) -> Html {
    let rows = SERVICES.iter().map(|service| {
        html! {
            <tr>
                <td>{ service.name }</td>
                <td>{ service.log }</td>
                <td>{ service.ok_means }</td>
                <td>{ source(service.source.0, service.source.1) }</td>
            </tr>
        }
    });
    html! {
        <>
        <div class="prose">
            <p>{ "Every AWS database and log service has a write-ahead log or a replicated log inside it. What matters to \
                  a design is what each one documents about the moment it says OK. Only AWS's own documentation and papers \
                  are used below." }</p>
        </div>
        <table class="services">
            <thead><tr><th>{ "service" }</th><th>{ "its log" }</th><th>{ "OK means" }</th><th>{ "source" }</th></tr></thead>
            <tbody>{ for rows }</tbody>
        </table>
        </>
    }
}

const CHEAT_CARD: [(&str, &str); 9] = [
    ("the rule", "log before apply; durable before OK; OK names its failure class"),
    ("the call", "fdatasync (or O_DSYNC) on the log; fsync the directory after creating or renaming a segment"),
    ("the ceiling", "one log: 1 ÷ L syncs a second; group commit carries load × L writes per sync"),
    ("the wait", "between L and 2L with group commit; up to W more with a window"),
    ("a failed sync", "fatal: fail the waiters, stop, recover; never retry"),
    ("the record", "checksum, length, type, payload; scan stops at the first record that fails"),
    ("deleting a segment", "only when its records are durable elsewhere and every reader has passed it"),
    ("pages", "redo only where LSN > pageLSN; full-page images or doublewrite against torn pages"),
    ("replicas", "commit at max(local sync, the (W−1)th fastest follower), not the sum"),
];

const CHECKLIST: [&str; 8] = [
    "Does every OK in the design name the failure class it survives?",
    "Is the sync before the acknowledgement on the code path that actually answers the client?",
    "Do sync errors stop the engine instead of being retried?",
    "Are log files zero-filled or recycled, and is the directory synced after a create or rename?",
    "Are sync latency and batch size exported as metrics, with alarms?",
    "Is every log reader's lag alarmed before the disk fills?",
    "Is torn-page protection on, or are atomic writes proven for this instance type and block size?",
    "Are replicas in separate zones, with a sync policy that survives a power event they all share?",
];

const INTERVIEW: [&str; 6] = [
    "Design the write path of a key-value store that acknowledges 100,000 writes a second on one cloud volume. \
                   Where does the sync go, how many are there, and what does a client wait?",
    "Your service reports p99 write latency of 2L. Is group commit broken, or working as designed? What would you measure?",
    "fsync returned EIO in production. Walk through what the process should do, and what the client that was waiting sees.",
    "After a crash the log's last record is half there. How does recovery know, and which writes may be missing?",
    "Why does PostgreSQL log a full page after each checkpoint, and what does InnoDB do instead?",
    "Three replicas in three zones: what does W = 2 cost in latency, and which failure can still lose an acknowledged write?",
];

/// One item per line of a list.
fn items(lines: &[&'static str]) -> Html {
    lines.iter().map(|line| html! { <li>{ *line }</li> }).collect()
}

/// The path of one OK: a card per Part with the number that Part computed, in the order
/// the navigation lists them; a card opens its Part.
fn ok_path(props: &ChapterProps) -> Html {
    let Model::Budget(model) = &*props.model.0 else { return Html::default() };
    let stops = model.recap.iter().map(|stop| {
        let part = super::choice::part_of_topic(stop.topic);
        let open = props.on_action.reform(move |_: MouseEvent| LabAction::GoToPart(part));
        html! {
            <li class="stop" data-part={part.to_string()}>
                <button class="stop-card" onclick={open} title={format!("open Part {part}")}>
                    <span class="stop-part">{ format!("Part {part} · {}", super::PART_TITLES[usize::from(part)]) }</span>
                    <strong class="stop-number">{ stop.headline.clone() }</strong>
                    <span class="stop-lesson">{ stop.lesson.clone() }</span>
                </button>
            </li>
        }
    });
    html! {
        <figure class="figure ok-path" data-figure="ok-path">
            <ol>{ for stops }</ol>
            <figcaption>{ "The path of one OK, from the load it must carry to the cloud volume it runs on: each Part's \
                number, computed again here by the same runs. Open a Part from its card." }</figcaption>
        </figure>
    }
}

#[component]
pub fn LearnedChapter(props: &ChapterProps) -> Html {
    let drills: [(&str, &str); 6] = [
        ("A log syncs in 1 ms and takes 100,000 writes a second. How many writes does each sync carry, and how long does a writer wait?",
         "About 100 per sync (load × L), 1,000 syncs a second, and a wait between L and 2L: 1.5 ms on average (Part 5)."),
        ("fdatasync returns EIO. The code retries and the retry succeeds. What went wrong?",
         "Linux may have marked the pages clean after the failed write-back, so the retry had nothing to write. The log must fail its waiters, stop and recover (Part 3)."),
        ("After a power cut the last record of the log fails its checksum. Which writes may be missing?",
         "Only writes that were never acknowledged, in a sync-before-OK mode: the scan stops at the first bad record, and everything acknowledged was synced before it (Part 7)."),
        ("Why may a write that timed out at the client exist after recovery?",
         "Its sync can finish a moment before the power goes; nobody was told OK. A timeout is an unknown outcome, so the retry must be idempotent (Parts 3 and 7)."),
        ("A CDC reader has confirmed only seq 10. Which log segments must stay?",
         "Every segment holding a record after seq 10, even if flushed files already hold them (Part 8)."),
        ("Three replicas, W = 2, local sync 1.0 ms, followers at 1.4 ms and 6.0 ms. What does a commit cost?",
         "max(1.0, 1.4) = 1.4 ms: the legs run in parallel and the slow follower does not count (Part 10)."),
    ];
    let drills = drills.iter().enumerate().map(|(index, (question, answer))| {
        html! {
            <li class="drill">
                <p>{ *question }</p>
                <details data-drill={index.to_string()}><summary>{ "think first, then reveal" }</summary><p>{ *answer }</p></details>
            </li>
        }
    });
    html! {
        <>
        <div class="prose">
            <p>{ "Back to the node that had to acknowledge 100,000 writes a second, each surviving a crash, with a log \
                  whose sync takes about 1 ms and so allows about 1,000 syncs a second:" }</p>
        </div>
        { ok_path(props) }
        <h3>{ "The cheat card" }</h3>
        <table class="cheat-card">
            <tbody>{ for CHEAT_CARD.iter().map(|(rule, says)| html! { <tr><th>{ *rule }</th><td>{ *says }</td></tr> }) }</tbody>
        </table>
        <h3>{ "Failure checklist" }</h3>
        <ul class="checklist">{ items(&CHECKLIST) }</ul>
        <h3>{ "Drills" }</h3>
        <ol class="drills">{ for drills }</ol>
        <h3>{ "Interview questions" }</h3>
        <ol class="interview">{ items(&INTERVIEW) }</ol>
        <p class="note">{ "Follow-ups worth preparing: what changes if the drive lies about flushes; what if a CDC consumer stops \
            reading for a day; what if the volume's IOPS baseline is the bottleneck rather than its latency." }</p>
        <p class="note">{ "Sources for every fact are given beside it in the Part that teaches it." }
            { source("fsync(2)", "https://man7.org/linux/man-pages/man2/fsync.2.html") }</p>
        </>
    }
}
