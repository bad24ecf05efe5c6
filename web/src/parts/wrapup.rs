//! Parts 11 and 12: AWS, the cheat card and the drills.

use std::rc::Rc;

use yew::prelude::*;

use crate::figures::write_path::{write_path, WritePathProps};
use crate::layout::Scene;

use super::ChapterProps;
use crate::model::Model;
use crate::state::LabAction;

/// Each managed service, its log and what AWS documents about when it says OK, with the
/// source: static markup, one string.
const SERVICES: &str = "<h3>What OK means in AWS's own services</h3><div class=\"prose\"><p>Every AWS database and log service has a write-ahead log or a replicated log inside it. What matters to a design is what each one documents about the moment it says OK.</p></div><table class=\"services\"><thead><tr><th>service</th><th>its log</th><th>OK means</th><th>source</th></tr></thead><tbody><tr><td>Amazon Aurora</td><td>the database sends only redo log records to a storage fleet that keeps six copies across three Availability Zones</td><td>a write is durable once four of the six copies have it (a 4 of 6 write quorum)</td><td><a class=\"source\" href=\"https://docs.aws.amazon.com/AmazonRDS/latest/AuroraUserGuide/Aurora.Overview.StorageReliability.html\" target=\"_blank\" rel=\"noopener\">[AWS: Aurora storage and reliability; Verbitski et al., SIGMOD 2017]</a></td></tr><tr><td>Amazon RDS Multi-AZ (one standby)</td><td>the engine's own WAL or redo log, replicated synchronously to a standby in another Availability Zone</td><td>committed on the primary and on the standby's storage</td><td><a class=\"source\" href=\"https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/Concepts.MultiAZSingleStandby.html\" target=\"_blank\" rel=\"noopener\">[AWS: RDS Multi-AZ deployments]</a></td></tr><tr><td>Amazon DynamoDB</td><td>each partition is a replication group of three replicas in different zones running Multi-Paxos over a write-ahead log</td><td>acknowledged once two of the three replicas have written the log record</td><td><a class=\"source\" href=\"https://www.usenix.org/conference/atc22/presentation/elhemali\" target=\"_blank\" rel=\"noopener\">[Elhemali et al., Amazon DynamoDB, USENIX ATC 2022]</a></td></tr><tr><td>Amazon MemoryDB</td><td>a distributed transactional log spread across Availability Zones behind the in-memory engine</td><td>a write is acknowledged after the log has committed it in multiple zones</td><td><a class=\"source\" href=\"https://docs.aws.amazon.com/memorydb/latest/devguide/what-is-memorydb.html\" target=\"_blank\" rel=\"noopener\">[AWS: MemoryDB features]</a></td></tr><tr><td>Amazon S3</td><td>none exposed; objects are stored redundantly across at least three Availability Zones (S3 Standard)</td><td>a successful PUT is durable and visible to every later read (strong read-after-write consistency)</td><td><a class=\"source\" href=\"https://docs.aws.amazon.com/AmazonS3/latest/userguide/DataDurability.html\" target=\"_blank\" rel=\"noopener\">[AWS: S3 data protection and consistency]</a></td></tr><tr><td>Amazon EBS gp3 (your own engine)</td><td>yours: the volume is replicated within one Availability Zone</td><td>a completed sync; baseline 3,000 IOPS and 125 MiB/s, more if provisioned</td><td><a class=\"source\" href=\"https://docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html\" target=\"_blank\" rel=\"noopener\">[AWS: EBS General Purpose SSD volumes]</a></td></tr></tbody></table>";

#[component]
pub fn AwsChapter(_props: &ChapterProps) -> Html {
    super::markup(SERVICES)
}

/// The cheat card, a row per lesson in the order of the Parts.
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

/// The cheat card's last rows: the WAL with no local disk (after the AWS budget's row,
/// which is computed).
const CHEAT_CARD_REMOTE: [(&str, &str); 2] = [
    ("no local disk (Part 13)", "an OK once the upload is stored; appends meanwhile share the next upload; the epoch in every key fences a replaced node"),
    ("in Postgres (Part 14)", "an OK once the rows are committed; a ring of slot tables; the node row's epoch fences a replaced node"),
];


/// The checklist, the interview questions and the closing notes.
const CLOSING: &str = "<h3>Failure checklist</h3><ul class=\"checklist\"><li>Does every OK in the design name the failure class it survives?</li><li>Is the sync before the acknowledgement on the code path that actually answers the client?</li><li>Do sync errors stop the engine instead of being retried?</li><li>Are log files zero-filled or recycled, and is the directory synced after a create or rename?</li><li>Are sync latency and batch size exported as metrics, with alarms?</li><li>Is every log reader's lag alarmed before the disk fills?</li><li>Is torn-page protection on, or are atomic writes proven for this instance type and block size?</li><li>Are replicas in separate zones, with a sync policy that survives a power event they all share?</li></ul><h3>Interview questions</h3><ol class=\"interview\"><li>Design the write path of a key-value store that acknowledges 100,000 writes a second on one cloud volume. Where does the sync go, how many are there, and what does a client wait?</li><li>Your service reports p99 write latency of 2L. Is group commit broken, or working as designed? What would you measure?</li><li>fsync returned EIO in production. Walk through what the process should do, and what the client that was waiting sees.</li><li>After a crash the log's last record is half there. How does recovery know, and which writes may be missing?</li><li>Why does PostgreSQL log a full page after each checkpoint, and what does InnoDB do instead?</li><li>Three replicas in three zones: what does W = 2 cost in latency, and which failure can still lose an acknowledged write?</li></ol><p class=\"note\">Follow-ups worth preparing: what changes if the drive lies about flushes; what if a CDC consumer stops reading for a day; what if the volume's IOPS baseline is the bottleneck rather than its latency.</p><p class=\"note\">Sources for every fact are given beside it in the Part that teaches it.<a class=\"source\" href=\"https://man7.org/linux/man-pages/man2/fsync.2.html\" target=\"_blank\" rel=\"noopener\">[fsync(2)]</a></p>";


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

/// A drill: a question, three answers to choose from, which is right, and why.
struct Drill {
    question: &'static str,
    choices: [&'static str; 3],
    right: usize,
    why: &'static str,
}

const DRILLS: [Drill; 6] = [
    Drill { question: "A log syncs in 1 ms and takes 100,000 writes a second with group commit. How many writes does each sync carry?",
        choices: ["1", "about 100", "about 100,000"], right: 1,
        why: "About 100 per sync (load × L), 1,000 syncs a second, and a wait between L and 2L: 1.5 ms on average (Part 5)." },
    Drill { question: "fdatasync returns EIO. The code retries and the retry succeeds. Are the records safe?",
        choices: ["Yes: the retry wrote them", "Not necessarily: the failed write-back may have marked the pages clean, so the retry had nothing to write", "Yes, once the directory is synced too"], right: 1,
        why: "The log must fail its waiters, stop and recover from what is on the device (Part 3)." },
    Drill { question: "A record's header is 7 bytes: checksum, length, type. After a crash, how does the scan know where the log ends?",
        choices: ["It reads the file's size", "It stops at the first record whose length or checksum does not check out", "It trusts the last header it finds"], right: 1,
        why: "Each record carries its own length and checksum, so a torn or zero tail stops the scan (Parts 4 and 7)." },
    Drill { question: "After a power cut the last record of the log fails its checksum. Which writes may be missing?",
        choices: ["Some acknowledged writes", "Every write in that segment", "Only writes that were never acknowledged"], right: 2,
        why: "In a sync-before-OK mode everything acknowledged was synced before the torn record, and the scan stops at it (Part 7)." },
    Drill { question: "A CDC reader has confirmed only seq 10. Which log segments must stay?",
        choices: ["Every segment holding a record after seq 10", "Only the segment being written", "None: the flushed files hold the data"], right: 0,
        why: "A segment goes once its records are flushed and every reader has passed it (Part 8)." },
    Drill { question: "Three replicas, W = 2, local sync 1.0 ms, followers at 1.4 ms and 6.0 ms. What does a commit cost?",
        choices: ["1.4 ms", "2.4 ms", "8.4 ms"], right: 0,
        why: "max(1.0, 1.4) = 1.4 ms: the legs run in parallel and the slow follower does not count (Part 10)." },
];

/// The cheat card as markup: a row per lesson, the AWS budget's computed.
fn cheat_card(props: &ChapterProps) -> String {
    let aws = match &*props.model.0 {
        Model::Budget(model) => model.budget.as_ref().ok().map(crate::model::recap::aws_budget),
        _ => None,
    };
    let rows = CHEAT_CARD.iter().copied().chain(aws.as_deref().map(|aws| ("on AWS (Part 11)", aws))).chain(CHEAT_CARD_REMOTE.iter().copied());
    let rows: String = rows.map(|(rule, says)| format!("<tr><th>{rule}</th><td>{says}</td></tr>")).collect();
    format!("<table class=\"cheat-card\"><tbody>{rows}</tbody></table>")
}

#[component]
pub fn LearnedChapter(props: &ChapterProps) -> Html {
    // The answer chosen for each drill; a drill counts as answered (in the navigation's
    // progress) only once an answer is chosen, never by revealing it.
    // Two bits a drill: 0 unanswered, else the chosen answer + 1.
    let chosen = use_state(|| 0u32);
    // Write 1's path from Part 0, drawn at its end: the OK.
    let path_steps = Rc::new(crate::model::write_path::path(&props.params));
    // The question and its answers are markup (the browser keeps which one is checked);
    // one listener on the list reads which drill and answer a change was for.
    let on_change = {
        let chosen = chosen.clone();
        Callback::from(move |event: Event| {
            let input: web_sys::HtmlInputElement = event.target_unchecked_into();
            let (Some(index), Ok(choice)) = (input.get_attribute("data-drill").and_then(|d| d.parse::<usize>().ok()), input.value().parse::<u32>()) else { return };
            if index < DRILLS.len() && choice < 3 {
                chosen.set((*chosen & !(3 << (2 * index))) | ((choice + 1) << (2 * index)));
            }
        })
    };
    let drills = DRILLS.iter().enumerate().map(|(index, drill)| {
        let picked = match (*chosen >> (2 * index)) & 3 { 0 => None, answer => Some(answer as usize - 1) };
        let choices: String = drill.choices.iter().enumerate().map(|(choice, text)| format!(
            "<label class=\"choice\"{}><input type=\"radio\" name=\"drill-{index}\" data-drill=\"{index}\" value=\"{choice}\">{text}</label>",
            if choice == drill.right { " data-right" } else { "" })).collect();
        let body = format!(
            "<fieldset><legend>{}</legend>{choices}</fieldset><details data-reveal=\"{index}\"><summary>show the answer (not counted as answered)</summary><p>{}</p></details>",
            drill.question, drill.choices[drill.right]);
        html! {
            <li class="drill" data-answered={picked.is_some().to_string()}>
                { Html::from_html_unchecked(AttrValue::from(body)) }
                <p class="drill-verdict" aria-live="polite">{ match picked {
                    Some(p) if p == drill.right => format!("Right. {}", drill.why),
                    Some(_) => format!("Not quite (the right answer is marked). {}", drill.why),
                    None => String::new(),
                } }</p>
            </li>
        }
    });
    html! {
        <>
        <Scene name="one-ok" title="The path of one OK: each card below is a Part's number, computed again by the same runs"
            controls={html! { <p class="caption scene-caption">{ "Write 1 has its OK: it passed every station below, and each Part of the lab was one of them." }</p> }}
            drawn={{
                let steps = path_steps.clone();
                Callback::from(move |room| write_path(&WritePathProps { reached: steps.len(), steps: steps.clone() }, room))
            }}>
        </Scene>
        { ok_path(props) }
        <h3>{ "The cheat card" }</h3>
        { Html::from_html_unchecked(AttrValue::from(cheat_card(props))) }
        <h3>{ "Drills" }</h3>
        <ol class="drills" onchange={on_change}>{ for drills }</ol>
        { super::markup(CLOSING) }
        </>
    }
}
