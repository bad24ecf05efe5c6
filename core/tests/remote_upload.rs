//! The upload from WAL to committed objects, computed from simulated runs: ids reserved
//! before the upload, one atomic commit advancing every stream, the WAL objects below it
//! deleted; a crash between upload and commit leaves orphans that expire, and no record
//! is read twice.

use walab_core::sim::remote::upload::{self, AttemptOutcome, ObjectKind, UploadRun, UploadSetup, STREAMS};
use walab_core::sim::remote::{run, Load, RemoteBackend, RemoteRun, RemoteSetup};
use walab_core::sim::SyncLatency;
use walab_core::time::Nanos;

fn ms(millis: u64) -> Nanos {
    Nanos::from_millis(millis)
}

fn wal(takeover_at: Option<Nanos>) -> (RemoteSetup, RemoteRun) {
    let setup = RemoteSetup {
        latency: SyncLatency::fixed(ms(25)),
        takeover_at,
        ..RemoteSetup::new(RemoteBackend::S3, Load::Rate { rate_per_s: 20_000, poisson: false }, 600)
    };
    let run = run(&setup).unwrap();
    (setup, run)
}

fn upload(setup: &RemoteSetup, wal: &RemoteRun, crash: Option<u64>) -> UploadRun {
    let upload_setup = UploadSetup { crash_before_commit: crash, ..UploadSetup::lab() };
    upload::run(wal, &upload_setup, &setup.latency, setup.seed, setup.record_bytes).unwrap()
}

fn t(at: Option<Nanos>) -> String {
    at.map_or("-".to_string(), |at| format!("{:.3}", at.as_millis_f64()))
}

fn table(run: &UploadRun) -> String {
    let mut lines = Vec::new();
    for block in &run.blocks {
        lines.push(format!("block {} {} records from record {} sealed {}", block.block, block.records, block.first_record, t(Some(block.sealed))));
        for attempt in &block.attempts {
            lines.push(format!(
                "  reserve {} ids {:?} reserved {} uploaded {} answered {} {:?}",
                t(Some(attempt.reserve_sent)),
                attempt.ids,
                t(Some(attempt.reserved)),
                t(Some(attempt.uploaded)),
                t(attempt.commit_answered),
                attempt.outcome
            ));
        }
    }
    for object in &run.objects {
        let ranges: Vec<String> = object.ranges.iter().map(|r| format!("s{}:{}..{}", r.stream + 1, r.start, r.end)).collect();
        lines.push(format!("object {} {:?} [{}] committed {} expired {}", object.id, object.kind, ranges.join(" "), t(object.committed), t(object.expired)));
    }
    for commit in &run.commits {
        lines.push(format!("commit {} block {} ends {:?}", t(Some(commit.at)), commit.block, commit.stream_ends));
    }
    for delete in &run.deletes {
        lines.push(format!("delete {}..{} batches {}..={}", t(Some(delete.sent)), t(Some(delete.done)), delete.batches[0], delete.batches[delete.batches.len() - 1]));
    }
    lines.join("\n")
}

#[test]
fn blocks_become_stream_set_and_stream_objects_committed_in_order_then_the_wal_is_trimmed() {
    let (setup, wal) = wal(None);
    let run = upload(&setup, &wal, None);
    expect_test::expect![[r#"
        block 1 97 records from record 1 sealed 90.025
          reserve 90.025 ids [0, 1] reserved 92.025 uploaded 117.025 answered 119.025 Committed
        block 2 148 records from record 100 sealed 119.025
          reserve 119.025 ids [2] reserved 121.025 uploaded 146.025 answered 148.025 Committed
        block 3 148 records from record 336 sealed 148.025
          reserve 148.025 ids [3] reserved 150.025 uploaded 175.025 answered 177.025 Committed
        block 4 148 records from record 98 sealed 177.025
          reserve 177.025 ids [4, 5, 6] reserved 179.025 uploaded 204.025 answered 206.025 Committed
        block 5 59 records from record 105 sealed 206.025
          reserve 206.025 ids [7, 8] reserved 208.025 uploaded 233.025 answered 235.025 Committed
        object 0 StreamSet [s2:0..17 s3:0..16 s4:0..8] committed 119.025 expired -
        object 1 Stream [s1:0..56] committed 119.025 expired -
        object 2 Stream [s1:56..204] committed 148.025 expired -
        object 3 Stream [s1:204..352] committed 177.025 expired -
        object 4 StreamSet [s1:352..355] committed 206.025 expired -
        object 5 Stream [s2:17..89] committed 206.025 expired -
        object 6 Stream [s3:16..89] committed 206.025 expired -
        object 7 StreamSet [s3:89..96] committed 235.025 expired -
        object 8 Stream [s4:8..60] committed 235.025 expired -
        commit 119.025 block 1 ends [56, 17, 16, 8]
        commit 148.025 block 2 ends [204, 17, 16, 8]
        commit 177.025 block 3 ends [352, 17, 16, 8]
        commit 206.025 block 4 ends [355, 89, 89, 8]
        commit 235.025 block 5 ends [355, 89, 96, 60]
        delete 119.025..144.025 batches 1..=4
        delete 235.025..260.025 batches 5..=5"#]].assert_eq(&table(&run));
    // Every acknowledged record ends up committed exactly once, in its own stream.
    let ends = run.stream_ends_at(Nanos::MAX);
    assert_eq!(ends.iter().sum::<u64>(), wal.records_acked);
    assert_eq!(run.read_twice, 0);
    for block in &run.blocks {
        let attempt = block.attempts.last().unwrap();
        assert_eq!(attempt.outcome, AttemptOutcome::Committed);
        assert!(attempt.reserved < attempt.uploaded, "ids are reserved before the upload");
        for &id in &attempt.ids {
            let object = &run.objects[id as usize];
            assert!(object.stored <= attempt.uploaded && object.committed == attempt.commit_answered);
        }
    }
    assert!(run.objects.iter().any(|o| o.kind == ObjectKind::Stream), "the busy stream's runs get stream objects");
    assert!(run.objects.iter().any(|o| o.kind == ObjectKind::StreamSet));
    // Every WAL object is deleted once its records are committed, never before.
    let deleted: Vec<u64> = run.deleted_by(Nanos::MAX).collect();
    assert_eq!(deleted.len(), wal.batches.len());
    for delete in &run.deletes {
        assert!(run.commits.iter().any(|c| c.at == delete.sent), "a delete follows a commit");
        let ends = run.stream_ends_at(delete.sent);
        for batch in &delete.batches {
            let batch = wal.batches.iter().find(|b| b.batch == *batch).unwrap();
            for record in batch.first_record..batch.first_record + batch.records {
                let (stream, offset) = (run.record_stream[record as usize - 1], run.record_offset[record as usize - 1]);
                assert!(offset < ends[stream as usize], "record {record} of batch {} is committed before its delete", batch.batch);
            }
        }
    }
    // With a backlog the seal takes each stream's run in name order: the busy stream's
    // first, the quiet ones once it is drained.
    assert!(run.blocks.iter().any(|block| {
        let objects: Vec<_> = run.objects.iter().filter(|o| o.block == block.block).collect();
        objects.len() == 1 && objects[0].ranges.len() == 1 && objects[0].ranges[0].stream == 0
    }), "a block of the busy stream alone");
    assert_eq!(STREAMS, 4);
}

#[test]
fn a_crash_between_upload_and_commit_leaves_an_orphan_id_that_expires_and_nothing_is_read_twice() {
    let (setup, wal) = wal(None);
    let clean = upload(&setup, &wal, None);
    let crashed = upload(&setup, &wal, Some(2));
    let block = &crashed.blocks[1];
    assert_eq!(block.attempts.len(), 2);
    assert_eq!(block.attempts[0].outcome, AttemptOutcome::CrashedBeforeCommit);
    assert_eq!(block.attempts[1].outcome, AttemptOutcome::Committed);
    let orphans: Vec<_> = crashed.objects.iter().filter(|o| o.committed.is_none()).collect();
    assert_eq!(orphans.len(), block.attempts[0].ids.len());
    for orphan in &orphans {
        assert!(block.attempts[0].ids.contains(&orphan.id));
        assert_eq!(orphan.expired, Some(orphan.reserved + UploadSetup::lab().id_ttl));
        assert!(!block.attempts[1].ids.contains(&orphan.id), "the retry reserves fresh ids");
    }
    // The retry uploads the same records again; only the commit decides what readers see.
    assert!(crashed.orphan_overlap > 0);
    assert_eq!(crashed.orphan_overlap, block.records);
    assert_eq!(crashed.read_twice, 0);
    assert_eq!(crashed.stream_ends_at(Nanos::MAX), clean.stream_ends_at(Nanos::MAX));
    // Nothing is trimmed from the WAL for block 2 until its retry commits.
    let retry_commit = block.attempts[1].commit_answered.unwrap();
    let first_after_block_1 = crashed.deletes.iter().find(|d| d.batches.iter().any(|&b| {
        let batch = wal.batches.iter().find(|x| x.batch == b).unwrap();
        batch.first_record + batch.records > block.first_record
    }));
    assert!(first_after_block_1.is_none_or(|d| d.sent >= retry_commit));
}

#[test]
fn after_a_takeover_the_old_owners_commit_is_refused_and_its_ids_expire() {
    // Node B claims the node while block 1 is being uploaded.
    let (setup, clean_wal) = wal(None);
    let clean = upload(&setup, &clean_wal, None);
    let (setup, wal) = wal(Some(clean.blocks[0].attempts[0].reserve_sent));
    let run = upload(&setup, &wal, None);
    let claimed = wal.takeover.as_ref().unwrap().claimed_at;
    assert!(run.commits.is_empty(), "no commit by A after B's claim");
    assert_eq!(run.blocks.len(), 1, "A uploads no further block");
    let attempt = &run.blocks[0].attempts[0];
    assert_eq!(attempt.outcome, AttemptOutcome::Fenced);
    assert!(attempt.reserve_sent < claimed && attempt.commit_answered.unwrap() >= claimed);
    for &id in &attempt.ids {
        let object = &run.objects[id as usize];
        assert_eq!((object.committed, object.expired), (None, Some(object.reserved + UploadSetup::lab().id_ttl)));
    }
    assert!(run.deletes.is_empty(), "nothing is trimmed from the WAL B recovers");
    assert_eq!(run.read_twice, 0);
}

#[test]
fn a_takeover_before_any_block_is_due_leaves_the_upload_empty() {
    // S3 Standard's latencies, node B at 28.5 to 30 ms: A has acknowledged at most batch
    // 1's one record when B claims, and that record's block would be due 40 ms after its
    // acknowledgement, past the claim. A seals nothing; B's recovery replays the record.
    for seed in 1..=3 {
        for takeover_micros in [28_500, 29_000, 30_000] {
            let setup = RemoteSetup {
                seed,
                takeover_at: Some(Nanos::from_micros(takeover_micros)),
                ..RemoteSetup::new(RemoteBackend::S3, Load::Rate { rate_per_s: 20_000, poisson: false }, 600)
            };
            let wal = run(&setup).unwrap();
            let takeover = wal.takeover.as_ref().unwrap();
            let run = upload(&setup, &wal, None);
            assert!(wal.records_acked <= 1, "seed {seed}: {} acknowledged", wal.records_acked);
            if let Some(first_acked) = wal.records.iter().find_map(|record| record.acked) {
                let due = first_acked + UploadSetup::lab().block_age_max;
                assert!(due >= takeover.claimed_at, "seed {seed}: the first block is due after B's claim");
            }
            assert!(run.blocks.is_empty() && run.commits.is_empty() && run.objects.is_empty(), "seed {seed}: {run:?}");
        }
    }
}

#[test]
fn one_record_is_uploaded_once_it_is_old_enough() {
    let setup = RemoteSetup {
        latency: SyncLatency::fixed(ms(25)),
        ..RemoteSetup::new(RemoteBackend::S3, Load::Rate { rate_per_s: 1, poisson: false }, 1)
    };
    let wal = run(&setup).unwrap();
    let acked = wal.records[0].acked.unwrap();
    let run = upload(&setup, &wal, None);
    assert_eq!(run.blocks.len(), 1);
    assert_eq!(run.blocks[0].sealed, acked + UploadSetup::lab().block_age_max);
    assert_eq!(run.blocks[0].records, 1);
    assert_eq!(run.commits.len(), 1);
}
