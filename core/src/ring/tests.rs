use super::*;
use crate::codec::tiny;
use crate::codec::Op;

fn geometry(segments: u64, segment_bytes: u64) -> RingGeometry {
    RingGeometry { segments, segment_bytes }
}

/// Tiny records for seqs `first..first + count`, as the machine's batch hands them out.
fn batch_records(first: u64, count: u64) -> Vec<Vec<u8>> {
    (first..first + count).map(|seq| tiny::encode(seq, Op::Put, format!("k{seq}").as_bytes(), b"value")).collect()
}

/// A row as the writer makes it: `count` records from seq `first` at `start`.
fn row(g: &RingGeometry, start: u64, epoch: u64, first: u64, count: u64) -> SlotRow {
    let records = batch_records(first, count);
    let bytes: usize = records.iter().map(Vec::len).sum();
    SlotRow {
        slot: g.slot(g.generation(start)),
        start_offset: start,
        end_offset: start + bytes as u64,
        epoch,
        body: encode_row_body(start, epoch, records.iter().map(Vec::as_slice)),
    }
}

#[test]
fn the_seed_defaults_hold_its_constraints() {
    let settings = PgWalSettings::default();
    assert_eq!(settings.geometry.capacity_bytes(), 448 << 20);
    assert_eq!(settings.validate(), Ok(()));
}

#[test]
fn generations_map_to_slots_round_the_ring() {
    let g = geometry(4, 1000);
    let table: Vec<(u64, u64, u64)> = [0, 999, 1000, 3999, 4000, 9500].iter().map(|&o| (o, g.generation(o), g.slot(g.generation(o)))).collect();
    assert_eq!(table, [(0, 0, 0), (999, 0, 0), (1000, 1, 1), (3999, 3, 3), (4000, 4, 0), (9500, 9, 1)]);
    assert_eq!(g.address(9, 500), 9500);
}

#[test]
fn a_generation_is_released_only_once_the_trim_offset_passes_its_end() {
    let g = geometry(4, 1000);
    // Trim at exactly the end of generation 0: its last row ends there and is kept.
    assert_eq!(g.first_kept_generation(1000), 0);
    assert_eq!(g.released(0, 1000), 0..0);
    assert_eq!(g.first_kept_generation(1001), 1);
    assert_eq!(g.released(1000, 2500), 0..2);
    assert_eq!(g.released(2500, 2400), 2..2, "a trim offset never moves back");
    // Generation 4 needs slot 0, which holds generation 0 until the trim passes 1000.
    assert!(g.may_write(3, 0));
    assert!(!g.may_write(4, 0));
    assert!(!g.may_write(4, 1000));
    assert!(g.may_write(4, 1001));
    assert!(!g.may_write(5, 1001));
}

#[test]
fn the_ring_drawn_slot_by_slot() {
    let g = geometry(4, 1000);
    assert_eq!(
        g.slots(1500, 4200),
        [SlotState::Head { generation: 4 }, SlotState::Kept { generation: 1 }, SlotState::Kept { generation: 2 }, SlotState::Kept { generation: 3 }]
    );
    assert_eq!(g.slots(0, 0), [SlotState::Head { generation: 0 }, SlotState::Free, SlotState::Free, SlotState::Free]);
}

#[test]
fn constraints_are_refused_by_name() {
    let mut s = PgWalSettings::default();
    s.geometry.segments = 1;
    assert_eq!(s.validate(), Err(SettingsError::SegmentsTooFew { segments: 1 }));
    s.geometry = geometry(8, 512 << 10);
    assert_eq!(s.validate(), Err(SettingsError::SegmentBytesBelowBatch { segment_bytes: 512 << 10, batch_bytes_max: 1 << 20 }));
    s.geometry = geometry(8, 5 << 30);
    assert_eq!(s.validate(), Err(SettingsError::SegmentBytesTooLarge { segment_bytes: 5 << 30 }));
    s.geometry = geometry(3, 64 << 20);
    assert_eq!(s.validate(), Err(SettingsError::CapacityNotAboveUnflushed { capacity_bytes: 128 << 20, unflushed_bytes_max: 128 << 20 }));
    let message = s.validate().unwrap_err().to_string();
    assert!(message.contains("must exceed max_unflushed_bytes"), "{message}");
}

#[test]
fn the_url_loses_walab_options_and_keeps_the_clients() {
    let split = split_wal_url(
        "postgres://postgres@127.0.0.1:5432/test?segments=4&segmentBytes=4MiB&application_name=walab&batchInterval=250us&maxBytesInBatch=64KiB&maxInflight=8&maxUnflushedBytes=8MiB&synchronousCommit=remote_apply&allowUnsafe=true",
    )
    .unwrap();
    assert_eq!(split.connect_url, "postgres://postgres@127.0.0.1:5432/test?application_name=walab");
    let expected = PgWalSettings {
        allow_unsafe: true,
        geometry: geometry(4, 4 << 20),
        batch_interval: Nanos::from_micros(250),
        batch_bytes_max: 64 << 10,
        inflight_max: 8,
        unflushed_bytes_max: 8 << 20,
        synchronous_commit: SynchronousCommit::RemoteApply,
    };
    assert_eq!(split.settings, expected);
    assert!(split.geometry_given);
    let plain = split_wal_url("postgresql://h/db?maxInflight=2").unwrap();
    assert_eq!(plain.connect_url, "postgresql://h/db");
    assert!(!plain.geometry_given, "no ring asked for: the stored one stands");
}

#[test]
fn the_options_are_snake_case_and_their_camel_case_names_still_work() {
    let snake = split_wal_url(
        "postgres://h/db?segments=4&segment_bytes=4MiB&batch_interval=250us&max_bytes_in_batch=64KiB&inflight=8&max_unflushed_bytes=8MiB&synchronous_commit=remote_apply&allow_unsafe=true",
    )
    .unwrap();
    let camel = split_wal_url(
        "postgres://h/db?segments=4&segmentBytes=4MiB&batchInterval=250us&maxBytesInBatch=64KiB&maxInflight=8&maxUnflushedBytes=8MiB&synchronousCommit=remote_apply&allowUnsafe=true",
    )
    .unwrap();
    assert_eq!(snake, camel);
    assert!(snake.geometry_given);
    // Both spellings of one option are one option given twice.
    assert_eq!(split_wal_url("postgres://h/db?inflight=2&maxInflight=3").unwrap_err(), UrlError::Repeated { name: "inflight".into() });
    // An unknown option's message lists the names, not the aliases.
    let listed = split_wal_url("postgres://h/db?inflite=2").unwrap_err().to_string();
    assert!(listed.contains("segment_bytes") && !listed.contains("segmentBytes"), "{listed}");
}

#[test]
fn a_bad_url_is_refused_naming_what_is_wrong() {
    let unknown = split_wal_url("postgres://h/db?segmets=4").unwrap_err();
    assert_eq!(unknown, UrlError::UnknownOption { name: "segmets".into() });
    assert!(unknown.to_string().starts_with("unknown option \"segmets\""));
    assert_eq!(split_wal_url("postgres://h/db?segments").unwrap_err(), UrlError::MissingValue { name: "segments".into() });
    assert_eq!(split_wal_url("postgres://h/db?segments=4&segments=5").unwrap_err(), UrlError::Repeated { name: "segments".into() });
    assert!(matches!(split_wal_url("postgres://h/db?allowUnsafe=yes"), Err(UrlError::BadValue { .. })));
    assert!(matches!(split_wal_url("postgres://h/db?synchronousCommit=off"), Err(UrlError::BadValue { .. })));
    assert!(matches!(split_wal_url("postgres://h/db?segmentBytes=12XB"), Err(UrlError::BadValue { .. })));
    assert_eq!(
        split_wal_url("postgres://h/db?segments=2&segmentBytes=64MiB"),
        Err(UrlError::Settings(SettingsError::CapacityNotAboveUnflushed { capacity_bytes: 64 << 20, unflushed_bytes_max: 128 << 20 }))
    );
    assert_eq!(split_wal_url("file:///x"), Err(UrlError::NotPostgres));
}

#[test]
fn sizes_and_durations_parse_exactly() {
    assert_eq!(parse_bytes("4096"), Some(4096));
    assert_eq!(parse_bytes("64MiB"), Some(64 << 20));
    assert_eq!(parse_bytes("1GiB"), Some(1 << 30));
    assert_eq!(parse_bytes("-1"), None);
    assert_eq!(parse_bytes("MiB"), None);
    assert_eq!(parse_duration("1ms"), Some(Nanos::from_millis(1)));
    assert_eq!(parse_duration("0.5"), Some(Nanos::from_micros(500)));
    assert_eq!(parse_duration("250us"), Some(Nanos::from_micros(250)));
    assert_eq!(parse_duration("2s"), Some(Nanos(2_000_000_000)));
    assert_eq!(parse_duration("fast"), None);
}

#[test]
fn slot_tables_are_named_from_the_crc32_of_the_cluster() {
    // CRC32 (IEEE) of "123456789" is the check value cbf43926.
    assert_eq!(cluster_tag("123456789"), "cbf43926");
    assert_eq!(slot_table_name(TablePrefix::Walab, "123456789", "0", 7).unwrap(), "walab_cbf43926_0_7");
    assert_eq!(slot_table_name(TablePrefix::Earlier, "123456789", "0", 7).unwrap(), "pico_wal_cbf43926_0_7");
    assert!(matches!(slot_table_name(TablePrefix::Walab, "c", "Node-1", 0), Err(NameError::BadNode { .. })));
    assert!(matches!(slot_table_name(TablePrefix::Walab, "c", &"n".repeat(60), 0), Err(NameError::TooLong { .. })));
    // 63 bytes under walab's prefix, 66 under the earlier one.
    let node = "n".repeat(63 - "walab_cbf43926__7".len());
    assert_eq!(slot_table_name(TablePrefix::Walab, "123456789", &node, 7).unwrap().len(), 63);
    assert!(matches!(slot_table_name(TablePrefix::Earlier, "123456789", &node, 7), Err(NameError::TooLong { .. })));
}

#[test]
fn a_cluster_keeps_the_table_prefix_it_was_made_with() {
    assert_eq!(TablePrefix::for_cluster(false, false), TablePrefix::Walab, "a new cluster");
    assert_eq!(TablePrefix::for_cluster(true, false), TablePrefix::Walab);
    assert_eq!(TablePrefix::for_cluster(false, true), TablePrefix::Earlier, "made before the rename");
    assert_eq!(TablePrefix::for_cluster(true, true), TablePrefix::Walab, "walab's node row wins");
    assert_eq!((TablePrefix::Walab.node_table(), TablePrefix::Earlier.node_table()), ("walab_node", "pico_wal_node"));
}

#[test]
fn a_row_round_trips_and_every_damage_is_named() {
    let g = geometry(4, 10_000);
    let good = row(&g, 500, 3, 10, 3);
    let records = decode_row(&good).unwrap();
    assert_eq!(records.iter().map(|r| r.seq).collect::<Vec<_>>(), [10, 11, 12]);
    assert_eq!(records[0].key, b"k10");

    let mut epoch = good.clone();
    epoch.epoch = 4;
    assert_eq!(decode_row(&epoch), Err(RowError::EpochMismatch { row: 4, frame: 3 }));
    let mut moved = good.clone();
    moved.start_offset = 600;
    assert_eq!(decode_row(&moved), Err(RowError::OffsetMismatch { row: 600, frame: 500 }));
    let mut flipped = good.clone();
    let last = flipped.body.len() - 1;
    flipped.body[last] ^= 1;
    assert!(matches!(decode_row(&flipped), Err(RowError::Checksum { .. })));
    let mut cut = good.clone();
    cut.body.truncate(cut.body.len() - 1);
    assert!(matches!(decode_row(&cut), Err(RowError::LengthMismatch { .. })));
    let mut end = good.clone();
    end.end_offset += 1;
    assert!(matches!(decode_row(&end), Err(RowError::EndMismatch { .. })));
    let mut short = good;
    short.body.truncate(10);
    assert_eq!(decode_row(&short), Err(RowError::HeaderShort { bytes: 10 }));
}

#[test]
fn recovery_follows_the_chain_across_slack_and_round_the_ring() {
    let g = geometry(3, 200);
    // Three slots of 200 bytes. The log runs from generation 3 (slot 0, the ring's
    // second trip) into generation 4 (slot 1); a generation-2 row below the trim offset
    // still sits in slot 2 and must be ignored.
    let r1 = row(&g, 600, 1, 1, 2); // gen 3
    let r2 = row(&g, r1.end_offset, 1, 3, 2); // gen 3, leaves slack before 800
    let r3 = row(&g, 800, 2, 5, 1); // gen 4: the jump over the slack
    let r4 = row(&g, r3.end_offset, 2, 6, 1);
    let stale = row(&g, 400, 1, 100, 1); // gen 2, below the trim offset
    let rows = vec![r3.clone(), stale, r2.clone(), r1.clone(), r4.clone()];
    let recovery = recover_chain(&g, 600, 2, &rows).unwrap();
    assert_eq!(recovery.records.iter().map(|r| r.seq).collect::<Vec<_>>(), [1, 2, 3, 4, 5, 6]);
    assert_eq!(recovery.head, r4.end_offset);
    assert_eq!(recovery.stop, ChainStop::End { at: r4.end_offset });
    assert_eq!(recovery.next_seq(), 7);
    // Trimmed through r2: the chain starts with the jump, and r2 gives the seq before.
    let recovery = recover_chain(&g, r2.end_offset, 2, &rows).unwrap();
    assert_eq!(recovery.seq_before_trim, Some(4));
    assert_eq!(recovery.records.iter().map(|r| r.seq).collect::<Vec<_>>(), [5, 6]);
}

#[test]
fn recovery_stops_at_the_first_gap_and_counts_what_lies_beyond() {
    let g = geometry(4, 1000);
    let r1 = row(&g, 0, 1, 1, 1);
    let r2 = row(&g, r1.end_offset, 1, 2, 1);
    let r3 = row(&g, r2.end_offset, 1, 3, 1);
    let recovery = recover_chain(&g, 0, 1, &[r1.clone(), r3]).unwrap();
    assert_eq!(recovery.records.len(), 1);
    assert_eq!(recovery.stop, ChainStop::Gap { at: r1.end_offset, rows_beyond: 1 });
    // An empty log after trimming everything: the seq continues after the trimmed row.
    let recovery = recover_chain(&g, r2.end_offset, 1, &[r1, r2]).unwrap();
    assert_eq!(recovery.records, []);
    assert_eq!(recovery.next_seq(), 3);
}

#[test]
fn recovery_refuses_corruption_and_fenced_writers_rows() {
    let g = geometry(4, 1000);
    let r1 = row(&g, 0, 2, 1, 1);
    let mut r2 = row(&g, r1.end_offset, 2, 2, 1);
    r2.body[20] ^= 0xff;
    assert!(matches!(recover_chain(&g, 0, 2, &[r1.clone(), r2]), Err(ChainError::Row { error: RowError::Checksum { .. }, .. })));
    let old = row(&g, r1.end_offset, 1, 2, 1);
    assert!(matches!(recover_chain(&g, 0, 2, &[r1.clone(), old]), Err(ChainError::EpochWentBack { epoch: 1, before: 2, .. })));
    assert!(matches!(recover_chain(&g, 0, 1, std::slice::from_ref(&r1)), Err(ChainError::EpochFromTheFuture { .. })));
    let repeat = row(&g, r1.end_offset, 2, 1, 1);
    assert!(matches!(recover_chain(&g, 0, 2, &[r1.clone(), repeat]), Err(ChainError::SeqWentBack { .. })));
    let mut misplaced = row(&g, r1.end_offset, 2, 2, 1);
    misplaced.slot = 3;
    assert!(matches!(recover_chain(&g, 0, 2, &[r1, misplaced]), Err(ChainError::WrongSlot { expected: 0, .. })));
}

#[test]
fn startup_checks_follow_the_seed() {
    let state = |in_recovery, fsync, names: &str| ServerState { in_recovery, fsync, synchronous_standby_names: names.into() };
    assert_eq!(startup_checks(&state(true, true, "s1"), true), Err(StartupRefusal::InRecovery));
    assert_eq!(startup_checks(&state(false, false, "s1"), false), Err(StartupRefusal::FsyncOff));
    assert_eq!(startup_checks(&state(false, false, "s1"), true), Ok(vec![StartupWarning::FsyncOffAllowed]));
    assert_eq!(startup_checks(&state(false, true, ""), false), Ok(vec![StartupWarning::NoSynchronousStandby]));
    assert_eq!(startup_checks(&state(false, true, "FIRST 1 (s1)"), false), Ok(vec![]));
}

#[test]
fn the_timeline_table() {
    let rows: Vec<(Option<u32>, u32, bool, Severity)> =
        vec![(None, 1, false, Severity::Info), (Some(2), 2, false, Severity::Info), (Some(3), 2, true, Severity::Warning), (Some(1), 2, true, Severity::Info), (Some(1), 2, false, Severity::Error)];
    let verdicts: Vec<String> = rows
        .iter()
        .map(|&(recorded, current, sync, severity)| {
            let verdict = timeline_verdict(recorded, current, sync);
            assert_eq!(verdict.severity(), severity);
            format!("{verdict:?}")
        })
        .collect();
    expect_test::expect![[r#"
        [
            "FirstStart { current: 1 }",
            "Equal { current: 2 }",
            "Lower { recorded: 3, current: 2 }",
            "HigherSynchronous { recorded: 1, current: 2 }",
            "HigherAsynchronous { recorded: 1, current: 2 }",
        ]
    "#]]
    .assert_debug_eq(&verdicts);
}

#[test]
fn the_start_up_clean_up_keeps_the_live_slots_below_the_head() {
    let g = geometry(4, 1000);
    let keep = SlotCleanUp::DeleteFrom { head: 2500 };
    // Trim in generation 1, head in generation 2: slots 1 and 2 keep their rows.
    assert_eq!(clean_up_plan(&g, 1200, 2500), [SlotCleanUp::Truncate, keep, keep, SlotCleanUp::Truncate]);
    // Round the ring: generations 3 to 5 live in slots 3, 0 and 1.
    let keep = SlotCleanUp::DeleteFrom { head: 5100 };
    assert_eq!(clean_up_plan(&g, 3001, 5100), [keep, keep, SlotCleanUp::Truncate, keep]);
    // An empty log: only the trim offset's generation is kept.
    assert_eq!(clean_up_plan(&g, 0, 0)[..2], [SlotCleanUp::DeleteFrom { head: 0 }, SlotCleanUp::Truncate]);
    // A head a whole ring ahead keeps every slot.
    assert!(clean_up_plan(&g, 0, 9000).iter().all(|step| *step == SlotCleanUp::DeleteFrom { head: 9000 }));
}

#[test]
fn a_new_ring_applies_only_to_a_drained_wal() {
    let (stored, other) = (geometry(4, 1000), geometry(6, 1000));
    assert_eq!(ring_change(&stored, &other, true, true), RingChange::Apply);
    assert_eq!(ring_change(&stored, &other, true, false), RingChange::Deferred);
    assert_eq!(ring_change(&stored, &other, false, true), RingChange::Unchanged, "the URL names no ring");
    assert_eq!(ring_change(&stored, &stored, true, true), RingChange::Unchanged);
    assert_eq!(parse_timeline("00000002"), Some(2));
    assert_eq!(parse_timeline("0000000G"), None);
}

#[test]
fn appends_resume_at_the_head_with_every_kept_generation_listed() {
    let g = geometry(3, 200);
    let r1 = row(&g, 600, 1, 1, 2); // gen 3
    let r2 = row(&g, r1.end_offset, 1, 3, 2); // gen 3
    let r3 = row(&g, 800, 2, 5, 1); // gen 4
    let rows = vec![r1.clone(), r2.clone(), r3.clone()];
    let recovery = recover_chain(&g, 600, 2, &rows).unwrap();
    let resume = recovery.resume_point(&g, 600);
    assert_eq!(resume.confirmations, [(2, r1.end_offset), (4, r2.end_offset), (5, r3.end_offset)]);
    assert_eq!(resume.segments, [(2, None), (3, Some(4)), (4, Some(5))], "the trim offset 600 ends generation 2, which is kept");
    assert_eq!((resume.segment, resume.segment_bytes), (4, r3.end_offset - 800));
    // Everything trimmed: nothing to confirm, the head's generation alone.
    let recovery = recover_chain(&g, r3.end_offset, 2, &rows).unwrap();
    let resume = recovery.resume_point(&g, r3.end_offset);
    assert!(resume.confirmations.is_empty());
    assert_eq!(resume.segments, [(4, None)]);
}

#[test]
fn a_row_body_is_the_stream_frame_of_the_epoch_and_the_records() {
    use crate::codec::stream::{encode_frame, StreamFrame};
    let records = batch_records(7, 3);
    let mut frame_records = vec![9u64.to_le_bytes().to_vec()];
    frame_records.extend(records.iter().cloned());
    let expected = encode_frame(&StreamFrame { frame_offset: 500, records: frame_records });
    assert_eq!(encode_row_body(500, 9, records.iter().map(Vec::as_slice)), expected);
}

#[test]
fn a_retry_takes_only_its_own_row_for_success() {
    let ours = RowAt { end: 140, epoch: 3, body: b"batch" };
    assert_eq!(judge_stored_row(&ours, &ours), StoredRowVerdict::Committed);
    assert_eq!(judge_stored_row(&ours, &RowAt { epoch: 4, ..ours }), StoredRowVerdict::Fenced);
    assert_eq!(judge_stored_row(&ours, &RowAt { body: b"other", ..ours }), StoredRowVerdict::Mismatch);
    assert_eq!(judge_stored_row(&ours, &RowAt { end: 141, ..ours }), StoredRowVerdict::Mismatch);
}

#[test]
fn the_chain_planned_from_places_and_walked_row_by_row_is_recover_chain() {
    let g = geometry(3, 200);
    let r1 = row(&g, 600, 1, 1, 2);
    let r2 = row(&g, r1.end_offset, 1, 3, 2);
    let r3 = row(&g, 800, 2, 5, 1);
    let r4 = row(&g, r3.end_offset, 2, 6, 1);
    let beyond = row(&g, r4.end_offset + 10, 2, 9, 1);
    let rows = vec![r3.clone(), r2.clone(), r1.clone(), r4.clone(), beyond];
    for trim in [600, r2.end_offset] {
        let whole = recover_chain(&g, trim, 2, &rows).unwrap();
        let places: Vec<RowPlace> = rows.iter().map(RowPlace::of).collect();
        let plan = plan_chain(&g, trim, &places);
        let before: Vec<SlotRow> =
            plan.before_trim.iter().map(|p| rows.iter().find(|r| RowPlace::of(r) == *p).unwrap().clone()).collect();
        let seq_before = seq_before_trim(&before);
        let mut walk = ChainWalk::new(&g, 2, seq_before);
        let mut seqs = Vec::new();
        for &index in &plan.rows {
            walk.row(&rows[index], &mut |record| seqs.push(record.seq)).unwrap();
        }
        let summary = walk.finish(&plan, seq_before);
        assert_eq!(seqs, whole.records.iter().map(|r| r.seq).collect::<Vec<_>>());
        assert_eq!((summary.head, summary.stop, summary.next_seq()), (whole.head, whole.stop, whole.next_seq()));
        assert_eq!(summary.resume_point(&g, trim), whole.resume_point(&g, trim));
        assert_eq!(summary.is_drained(), whole.records.is_empty());
    }
}
