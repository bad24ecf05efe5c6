use super::*;

fn device_with_file() -> (Device, FileId) {
    let mut device = Device::new(4);
    let file = device.register("wal-1");
    device.create(file, 16).unwrap();
    (device, file)
}

#[test]
fn a_write_is_only_in_the_page_cache_until_a_sync_returns() {
    let (mut device, file) = device_with_file();
    assert_eq!(device.write(file, 2, b"abcd").unwrap(), [0, 1]);
    assert_eq!(device.read_cache(file).unwrap()[..6], *b"\0\0abcd");
    assert_eq!(device.read_media(file).unwrap(), [0; 16]);
    let (sync, units) = device.start_sync(file).unwrap();
    assert_eq!(units, [0, 1]);
    assert_eq!(device.uncertain_units().len(), 2);
    assert_eq!(device.finish_sync(sync).unwrap(), [0, 1]);
    assert_eq!(device.read_media(file).unwrap()[..6], *b"\0\0abcd");
    assert!(device.uncertain_units().is_empty());
}

#[test]
fn a_power_cut_keeps_any_subset_of_the_running_syncs_units() {
    let (mut device, file) = device_with_file();
    device.write(file, 0, b"aaaabbbbcccc").unwrap();
    device.start_sync(file).unwrap();
    device.write(file, 12, b"dd").unwrap();
    let states = device.enumerate_power_cuts().unwrap();
    assert_eq!(states.len(), 8);
    let images: Vec<Vec<u8>> = states.iter().map(|(_, image)| image.file("wal-1").unwrap()[..14].to_vec()).collect();
    assert_eq!(images[0], b"\0\0\0\0\0\0\0\0\0\0\0\0\0\0");
    assert_eq!(images[5], b"aaaa\0\0\0\0cccc\0\0", "units 0 and 2 landed, 1 did not");
    assert_eq!(images[7], b"aaaabbbbcccc\0\0", "the dirty unit 3 is lost in every state");
    let (kept, image) = device.sample_power_cut(3);
    assert_eq!(device.sample_power_cut(3), (kept, image), "seeded");
}

#[test]
fn a_failed_sync_marks_the_pages_clean_without_writing_them() {
    let (mut device, file) = device_with_file();
    device.write(file, 0, b"good").unwrap();
    let (sync, _) = device.start_sync(file).unwrap();
    device.finish_sync(sync).unwrap();
    device.write(file, 4, b"lost").unwrap();
    let (sync, _) = device.start_sync(file).unwrap();
    assert_eq!(device.fail_sync(sync).unwrap(), [1]);
    // The retried sync finds nothing dirty and succeeds, writing nothing.
    let (retry, units) = device.start_sync(file).unwrap();
    assert!(units.is_empty());
    assert_eq!(device.finish_sync(retry).unwrap(), Vec::<u32>::new());
    assert_eq!(&device.read_media(file).unwrap()[..8], b"good\0\0\0\0");
    assert_eq!(&device.cache_image().file("wal-1").unwrap()[..8], b"goodlost", "the cache still has it");
}

#[test]
fn btrfs_reverts_the_cache_after_a_failed_sync() {
    let mut device = Device::with_profile(4, FailureProfile::RevertCache);
    let file = device.register("wal-1");
    device.create(file, 8).unwrap();
    device.write(file, 0, b"lost").unwrap();
    let (sync, _) = device.start_sync(file).unwrap();
    device.fail_sync(sync).unwrap();
    assert_eq!(&device.cache_image().file("wal-1").unwrap()[..4], &[0; 4], "the cache matches the media again");
}

#[test]
fn a_failed_background_write_back_is_reported_to_the_next_sync_once() {
    let (mut device, file) = device_with_file();
    device.write(file, 0, b"gone").unwrap();
    assert_eq!(device.fail_write_back(file).unwrap(), [0]);
    let (sync, units) = device.start_sync(file).unwrap();
    assert!(units.is_empty(), "nothing is dirty any more");
    device.finish_sync(sync).unwrap();
    assert!(device.take_reported_error(file), "this sync reports the error");
    assert!(!device.take_reported_error(file), "and only this one");
    assert_eq!(&device.read_media(file).unwrap()[..4], &[0; 4]);
    assert_eq!(&device.read_cache(file).unwrap()[..4], b"gone");
}

#[test]
fn write_back_puts_units_in_the_volatile_cache() {
    let (mut device, file) = device_with_file();
    device.write(file, 0, b"wb").unwrap();
    assert_eq!(device.write_back(file).unwrap(), [0]);
    assert_eq!(device.uncertain_units(), [UnitRef { file: 0, unit: 0 }]);
    let (sync, units) = device.start_sync(file).unwrap();
    assert_eq!(units, [0], "a sync flushes what write-back handed over");
    device.finish_sync(sync).unwrap();
    assert_eq!(&device.read_media(file).unwrap()[..2], b"wb");
}

#[test]
fn a_file_grows_on_the_media_only_with_a_sync_or_a_unit_that_landed() {
    let mut device = Device::new(4);
    let file = device.register("F7");
    device.create(file, 0).unwrap();
    device.write(file, 0, b"abcdef").unwrap();
    assert_eq!(device.read_cache(file).unwrap(), b"abcdef");
    assert_eq!(device.read_media(file).unwrap(), b"", "the size is not durable yet");
    let (sync, _) = device.start_sync(file).unwrap();
    let states = device.enumerate_power_cuts().unwrap();
    let sizes: Vec<&[u8]> = states.iter().map(|(_, image)| image.file("F7").unwrap()).collect();
    assert_eq!(sizes, [&b""[..], b"abcd", b"\0\0\0\0ef", b"abcdef"]);
    device.finish_sync(sync).unwrap();
    assert_eq!(device.read_media(file).unwrap(), b"abcdef");
}

#[test]
fn every_failed_write_back_counts_once_for_every_open() {
    let (mut device, file) = device_with_file();
    assert_eq!(device.write_errors(file), 0);
    device.write(file, 0, b"one!").unwrap();
    let (sync, _) = device.start_sync(file).unwrap();
    device.fail_sync(sync).unwrap();
    assert_eq!(device.write_errors(file), 1);
    device.write(file, 4, b"two!").unwrap();
    device.fail_write_back(file).unwrap();
    assert_eq!(device.write_errors(file), 2);
}

#[test]
fn a_cut_power_leaves_the_chosen_post_crash_state_and_a_clean_cache() {
    let (mut device, file) = device_with_file();
    device.write(file, 0, b"aaaabbbb").unwrap();
    device.start_sync(file).unwrap();
    device.write(file, 8, b"cccc").unwrap();
    let expected = device.image_after_power_cut(|unit| unit == 1);
    device.cut_power(|unit| unit == 1);
    assert_eq!(device.media_image(), expected);
    assert_eq!(device.cache_image(), expected, "the page cache starts again from the media");
    assert_eq!(&device.read_media(file).unwrap()[..12], b"\0\0\0\0bbbb\0\0\0\0");
    assert!(device.uncertain_units().is_empty());
    let (_, units) = device.start_sync(file).unwrap();
    assert!(units.is_empty(), "nothing is dirty after the reboot");
}

#[test]
fn btrfs_reverts_a_failed_extension_to_zeros() {
    let mut device = Device::with_profile(4, FailureProfile::RevertCache);
    let file = device.register("F7");
    device.create(file, 0).unwrap();
    device.write(file, 0, b"lost").unwrap();
    let (sync, _) = device.start_sync(file).unwrap();
    device.fail_sync(sync).unwrap();
    assert_eq!(device.read_cache(file).unwrap(), [0; 4]);
    assert_eq!(device.read_media(file).unwrap(), b"");
}

#[test]
fn files_are_independent_and_deleted_files_are_gone() {
    let mut device = Device::new(4);
    let log = device.register("wal-1");
    let table = device.register("F7");
    device.create(log, 8).unwrap();
    device.create(table, 0).unwrap();
    device.write(log, 0, b"log!").unwrap();
    device.write(table, 0, b"tbl!").unwrap();
    let (table_sync, _) = device.start_sync(table).unwrap();
    device.finish_sync(table_sync).unwrap();
    assert_eq!(&device.read_media(log).unwrap()[..4], &[0; 4], "the table's sync did not carry the log");
    device.delete(log).unwrap();
    assert_eq!(device.media_image().file("wal-1"), None);
    assert_eq!(device.write(log, 0, b"x"), Err(DeviceError::FileDeleted(log)));
    assert_eq!(device.finish_sync(SyncId(99)), Err(DeviceError::NoSuchSync(SyncId(99))));
}
