//! The operating-system knobs the WAL's threads set on themselves (Linux; no-ops
//! elsewhere). Each says what it buys.

/// Caps glibc's malloc arenas at two, before a command starts its writer threads.
///
/// glibc gives threads their own allocation arenas (up to eight per core), and memory a
/// thread frees into its arena is rarely handed back. With 64 writer threads and a
/// driver that frees what writers allocated, a long run's resident memory then creeps
/// up for a minute before it levels off; with two arenas it stays flat from the first
/// second (measured with `walab bench --seconds 60`). No-op on other C libraries.
pub fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; called before the threads start.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// Lets the calling thread's timed waits end when asked. Linux stretches a thread's
/// timeouts by up to its timer slack, 50 us by default, to coalesce wake-ups; the driver's
/// only timeout is the machine's batch window, and a 200 us window then closed about 280 us
/// after its first record (measured on the Postgres WAL with `--trace`), 230 us with one
/// microsecond of slack. No-op elsewhere.
pub(crate) fn precise_timers() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK only sets this thread's timer slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0 as libc::c_ulong, 0 as libc::c_ulong, 0 as libc::c_ulong);
    }
}

/// Hands memory freed after recovery (the segment images, the scan) back to the
/// operating system, so a long run's resident set is the running WAL's, not the
/// recovery's. No-op on other C libraries.
pub(crate) fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap memory to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Makes the calling thread `SCHED_BATCH` (Linux): its wake-ups never preempt a running
/// thread. The answering thread is woken by the driver just before the driver syncs; as
/// an ordinary thread it could take the driver's core at that moment and hold back the
/// sync it was about to issue. As a batch thread it runs once the driver blocks in the
/// sync, which is when its work is free. Lowering a thread's own policy needs no
/// privilege; where it fails, nothing changes.
pub(crate) fn yield_to_the_driver() {
    #[cfg(target_os = "linux")]
    // SAFETY: sched_setscheduler with pid 0 changes only the calling thread's policy.
    unsafe {
        let param = libc::sched_param { sched_priority: 0 };
        libc::sched_setscheduler(0, libc::SCHED_BATCH, &param);
    }
}

/// One look of a poll loop: gives the core to any thread waiting for it. A poll that
/// only spins keeps its core until its time slice ends, and Linux's scheduler (EEVDF)
/// does not always preempt it for a thread it wakes there: a driver woken from its sync
/// on the core where a lone writer polled waited out the whole 500 us poll (traced with
/// `bench --trace`: 575 us between one sync's end and the next one's start, against 5 us).
pub(crate) fn yield_to_a_waking_thread() {
    std::thread::yield_now();
}
