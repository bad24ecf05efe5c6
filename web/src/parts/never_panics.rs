//! Every simulation the page offers, over random links: each Part opened from a query of
//! random in-range parameters (as a shared link or the controls set them), the player
//! walked over every moment of the run, and what the figures draw at each moment
//! computed. A panic anywhere fails the case, which shrinks to the shortest link that
//! panics. The page's build aborts on a panic (a frozen page), so this is where one must
//! be caught.

use proptest::prelude::*;
use walab_core::time::Nanos;
use yew::Reducible;

use crate::model::{commit, failed_sync_view, group_steps, quorum_view, remote, remote_upload, segments, torn, Model};
use crate::player::PlayerAction;
use crate::state::{LabAction, LabState};

/// Milliseconds with up to three decimals, `0..max_thousandths` thousandths.
fn millis(max_thousandths: u64) -> impl Strategy<Value = String> {
    (0..max_thousandths).prop_map(|thousandths| format!("{}.{:03}", thousandths / 1000, thousandths % 1000))
}

/// One `name=value` pair of the parameters every Part shares.
fn shared_pair() -> impl Strategy<Value = String> {
    prop_oneof![
        prop_oneof![Just("tiny"), Just("steady"), Just("random")].prop_map(|v| format!("scenario={v}")),
        prop_oneof![Just("group"), Just("per-write"), Just("window"), Just("no-sync"), Just("periodic")].prop_map(|v| format!("policy={v}")),
        (10u64..100_000).prop_map(|micros| format!("sync={}.{:03}", micros / 1000, micros % 1000)),
        (1u64..1_000_001).prop_map(|load| format!("load={load}")),
        millis(100_000).prop_map(|ms| format!("window={ms}")),
        (1u8..4).prop_map(|w| format!("w={w}")),
        prop_oneof![Just(32u32), Just(512), Just(4096)].prop_map(|unit| format!("unit={unit}")),
        any::<u64>().prop_map(|seed| format!("seed={seed}")),
        millis(30_000).prop_map(|ms| format!("cut={ms}")),
        prop_oneof![Just("none"), Just("e1"), Just("e2")].prop_map(|v| format!("fault={v}")),
        prop_oneof![Just("fail-stop"), Just("retry"), Just("right"), Just("wrong")].prop_map(|v| format!("handling={v}")),
        (0u64..25).prop_map(|seq| format!("cdc={seq}")),
        prop_oneof![Just("fpi"), Just("doublewrite"), Just("none")].prop_map(|v| format!("protection={v}")),
        (1u64..25).prop_map(|batch| format!("log_sync_fails={batch}")),
        (0u32..25).prop_map(|guess| format!("predict={guess}")),
        Just("reveal=1".to_string()),
        Just("present=1".to_string()),
    ]
}

/// One `r...` pair of Parts 13 and 14.
fn remote_pair() -> impl Strategy<Value = String> {
    prop_oneof![
        (1u64..4097).prop_map(|n| format!("rwriters={n}")),
        (1u64..1_000_001).prop_map(|n| format!("rrate={n}")),
        Just("rpoisson=1".to_string()),
        prop_oneof![1u64..20, 1u64..5_001].prop_map(|n| format!("rcount={n}")),
        (1u64..17).prop_map(|n| format!("rinflight={n}")),
        prop_oneof![
            Just("s3-standard".to_string()),
            Just("s3-express".to_string()),
            Just("postgres".to_string()),
            (1u64..1_000_000).prop_map(|micros| format!("{}.{:03}", micros / 1000, micros % 1000)),
        ]
        .prop_map(|v| format!("rlat={v}")),
        (1u64..10_001, 1u64..10_000_000).prop_map(|(put, micros)| format!("rslow={put}:{}.{:03}", micros / 1000, micros % 1000)),
        (1u64..10_001).prop_map(|n| format!("rfail={n}")),
        prop_oneof![millis(500_000), millis(10_000_000)].prop_map(|ms| format!("rtake={ms}")),
        (0u64..10_000, prop::option::of(1u64..10_000)).prop_map(|(from, length)| {
            let until = length.map_or_else(String::new, |length| (from + length).min(10_000).max(from + 1).to_string());
            format!("rstall={from}:{until}")
        }),
        (2u64..17).prop_map(|n| format!("rseg={n}")),
        prop_oneof![Just("node"), Just("pg"), Just("host"), Just("zone")].prop_map(|v| format!("rev={v}")),
        prop_oneof![Just("none"), Just("async"), Just("sync")].prop_map(|v| format!("rstandby={v}")),
        Just("rzone=1".to_string()),
        prop_oneof![Just("equal"), Just("lower"), Just("higher-sync"), Just("higher-async")].prop_map(|v| format!("rtl={v}")),
        (1u64..101).prop_map(|n| format!("rupcrash={n}")),
        Just("rrecovery=1".to_string()),
        Just("rfsync=off".to_string()),
        Just("runsafe=1".to_string()),
        Just("rssn=empty".to_string()),
    ]
}

fn query() -> impl Strategy<Value = String> {
    let pairs = prop::collection::vec(prop_oneof![2 => shared_pair(), 3 => remote_pair()], 0..7);
    // Parts 13 and 14 have the most parameters, so they are drawn more often.
    let part = prop_oneof![3 => 0u8..15, 1 => Just(13u8), 1 => Just(14u8)];
    (part, pairs).prop_map(|(part, pairs)| {
        let mut query = format!("?part={part}");
        for pair in pairs {
            query.push('&');
            query.push_str(&pair);
        }
        query
    })
}

/// What the figures and captions of the open Part draw at `t`.
fn draw_at(state: &LabState, t: Nanos) {
    match &*state.model.0 {
        Model::Commit(model) => {
            if let Ok(tiny) = &model.tiny {
                let _ = group_steps::group_at(&tiny.trace, t);
                let _ = group_steps::caption_at(&tiny.trace, t);
            }
            if let Ok(steady) = &model.steady {
                let _ = steady.at(t);
                let _ = steady.queue_at(t);
                let _ = commit::steady_caption(steady, t);
            }
        }
        Model::Journey(Ok(journey)) => {
            let _ = journey.step_at(t);
        }
        Model::Tiny(tiny) => {
            let revealed = state.params.answer_shown();
            let _ = tiny.caption_now(t, revealed);
            let _ = tiny.gates_at(t);
            if state.params.part == 3 {
                let _ = failed_sync_view::paths_at(tiny, &state.params, t, revealed);
            }
            if let Some(trace) = tiny.trace() {
                let outcome = tiny.cut.as_ref().and_then(|cut| cut.as_ref().ok());
                let _ = torn::log_view(trace, state.params.unit_bytes as usize, t, outcome, tiny.checks_done(t));
            }
            if let Ok((run, _)) = &tiny.full {
                let _ = segments::kept(&segments::segment_files(run, t));
            }
        }
        Model::Quorum(quorum) => {
            if let Ok(branch) = &quorum.branch {
                if let Some(batch) = quorum_view::batch_at(branch, t) {
                    let _ = quorum_view::batch_place(branch, batch);
                }
                let _ = quorum_view::quorum_caption(branch, t, "");
            }
        }
        Model::Remote(model) => {
            if let Ok(run) = &model.run {
                for batch in remote::batches_drawn(run) {
                    let _ = remote::batch_state(run, batch, t);
                }
                let _ = remote::counts_at(run, t);
                let _ = remote::caption_at(run, t);
                let _ = remote::loss_at(run, &state.params.remote, t);
                let _ = remote::restart_at(run, &state.params.remote, t);
                let _ = remote::ring_at(run, t);
                let _ = remote::startup_at(run, &state.params.remote, t);
                let upload = model.upload.as_ref().and_then(|upload| upload.as_deref().ok());
                let _ = remote::caption_with_upload(run, upload, t);
                if let Some(upload) = upload {
                    for object in &upload.objects {
                        let _ = remote_upload::object_state(upload, object, t);
                    }
                    for batch in &run.batches {
                        let _ = remote_upload::wal_object_state(run, upload, batch.batch, t);
                    }
                    let _ = remote_upload::caption_parts(upload, t);
                    let _ = remote_upload::label_at(upload, t);
                }
            }
        }
        _ => {}
    }
}

/// The moments the player stops at, at most this many per case (a long run has
/// thousands; the first, the last and a spread between them are drawn).
const MOMENTS_MAX: usize = 120;

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn every_part_opens_and_plays_from_any_in_range_link(query in query()) {
        let state = std::rc::Rc::new(LabState::from_query(&query));
        let marks = std::rc::Rc::clone(&state.player.marks);
        let stride = marks.len().div_ceil(MOMENTS_MAX).max(1);
        let mut moments: Vec<Nanos> = marks.iter().copied().step_by(stride).collect();
        moments.extend([Nanos::ZERO, state.player.end]);
        let mut state = state;
        for &t in &moments {
            state = state.reduce(LabAction::Player(PlayerAction::Seek(t)));
            draw_at(&state, state.player.now);
        }
        // The keys a student presses: the next notable moment, steps both ways, the
        // power at the playhead, the answer.
        for action in [
            LabAction::Player(PlayerAction::Seek(Nanos::ZERO)),
            LabAction::Player(PlayerAction::Play),
            LabAction::Player(PlayerAction::Frame { elapsed_ms: 250.0 }),
            LabAction::Player(PlayerAction::StepForward),
            LabAction::Player(PlayerAction::NextNotable),
            LabAction::Player(PlayerAction::StepBack),
            LabAction::CutAtPlayhead,
            LabAction::Reveal,
            LabAction::Player(PlayerAction::ToEnd),
            LabAction::Player(PlayerAction::Frame { elapsed_ms: 16.0 }),
        ] {
            state = state.reduce(action);
            draw_at(&state, state.player.now);
        }
    }
}

/// The links that froze the page: node B taking over at 28.5 to 30 ms, before any block
/// of the upload was due, and a run of one record.
#[test]
fn part_13_opens_with_an_early_takeover_and_with_one_record() {
    for query in ["?part=13&rtake=30", "?part=13&rtake=28.5", "?part=13&rtake=30&seed=2", "?part=13&rtake=30&seed=3", "?part=13&rcount=1"] {
        let state = LabState::from_query(query);
        let Model::Remote(model) = &*state.model.0 else { panic!("{query}: Part 13's model") };
        assert!(model.run.is_ok(), "{query}: {:?}", model.run.as_ref().err());
        assert!(matches!(model.upload, Some(Ok(_))), "{query}: {:?}", model.upload);
    }
}
