//! The operating-system knobs the WAL's threads set on themselves (Linux; no-ops
//! elsewhere), and the driver's and writers' polls. Each says what it buys; each can be
//! switched off for one run (`walab bench --untune`) so that what it buys is measured
//! beside the same binary without it.

use std::sync::atomic::{AtomicU32, Ordering};

/// A piece of tuning `walab bench --untune` can switch off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Tuning {
    /// Two malloc arenas ([`limit_malloc_arenas`]).
    Arenas,
    /// One microsecond of timer slack on the driver ([`precise_timers`]).
    TimerSlack,
    /// The answering thread that wakes a large batch's writers while the driver syncs.
    Answerer,
    /// An idle driver polling its channel before it sleeps.
    IdleSpin,
    /// A lone writer polling for its answer before it sleeps.
    WriterPoll,
    /// A thread's poll giving up its core between looks ([`yield_to_a_waking_thread`]).
    PollYield,
    /// A short scheduler time slice on the threads that sync and answer ([`short_time_slice`]).
    ShortSlice,
}

static UNTUNED: AtomicU32 = AtomicU32::new(0);

/// Switches these pieces of tuning off for the rest of the process. Call before the WAL opens.
pub fn untune(pieces: &[Tuning]) {
    for piece in pieces {
        UNTUNED.fetch_or(1 << *piece as u32, Ordering::Relaxed);
    }
}

/// Whether this piece of tuning is on (it is unless [`untune`] switched it off).
pub(crate) fn tuned(piece: Tuning) -> bool {
    UNTUNED.load(Ordering::Relaxed) & (1 << piece as u32) == 0
}

/// Caps glibc's malloc arenas at two, before a command starts its writer threads.
///
/// glibc gives threads their own allocation arenas (up to eight per core), and memory a
/// thread frees into its arena is rarely handed back. With 64 writer threads and a
/// driver that frees what writers allocated, a long run's resident memory then creeps
/// up for a minute before it levels off; with two arenas it stays flat from the first
/// second (measured with `walab bench --seconds 60`). No-op on other C libraries.
pub fn limit_malloc_arenas() {
    if !tuned(Tuning::Arenas) {
        return;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; called before the threads start.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// Lets the calling thread's timed waits end when asked. Linux stretches a thread's
/// timeouts by up to its timer slack (50 us by default) to coalesce wake-ups, and the
/// driver's only timeout is the machine's batch window, which then closes late (by how
/// much: BENCHMARKS.md, "Measurements behind the code"). No-op elsewhere.
pub(crate) fn precise_timers() {
    if !tuned(Tuning::TimerSlack) {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK only sets this thread's timer slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0 as libc::c_ulong, 0 as libc::c_ulong, 0 as libc::c_ulong);
    }
}

/// Asks Linux's scheduler (EEVDF, 6.12 and later) for a 100 us time slice on the calling
/// thread, its shortest. A thread that wakes with a shorter slice than the one running
/// preempts it at once; with the default slice the woken thread may wait until the
/// running one's slice or the next tick ends, even when that one is a `nice 19` batch
/// job. The driver wakes for every write a lone writer makes (and again when its sync
/// returns), so on a busy machine those waits are its latency (a scheduler trace of them:
/// BENCHMARKS.md, "Measurements behind the code"). The slice only shortens how long these
/// threads run before the scheduler looks again; it takes nothing from other processes'
/// share. Older kernels and other systems ignore it.
pub(crate) fn short_time_slice() {
    if !tuned(Tuning::ShortSlice) {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        /// The kernel's `struct sched_attr` (its first version, 56 bytes).
        #[repr(C)]
        struct SchedAttr {
            size: u32,
            policy: u32,
            flags: u64,
            nice: i32,
            priority: u32,
            runtime: u64,
            deadline: u64,
            period: u64,
            util_min: u32,
            util_max: u32,
        }
        // SAFETY: sched_getattr fills a SchedAttr we own, of the size we pass.
        let nice = unsafe {
            let mut current: SchedAttr = std::mem::zeroed();
            let size = std::mem::size_of::<SchedAttr>() as libc::c_uint;
            if libc::syscall(libc::SYS_sched_getattr, 0, &mut current as *mut SchedAttr, size, 0) != 0
                || current.policy != libc::SCHED_OTHER as u32
            {
                return;
            }
            current.nice
        };
        let attr = SchedAttr {
            size: std::mem::size_of::<SchedAttr>() as u32,
            policy: libc::SCHED_OTHER as u32,
            flags: 0,
            nice,
            priority: 0,
            runtime: 100_000,
            deadline: 0,
            period: 0,
            util_min: 0,
            util_max: 0,
        };
        // SAFETY: sched_setattr on the calling thread (pid 0) reads the SchedAttr we own.
        unsafe {
            libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0);
        }
    }
}

/// One look of a poll loop: gives the core to any thread waiting for it. A poll that
/// only spins keeps its core until its time slice ends, and Linux's scheduler (EEVDF)
/// does not always preempt it for a thread it wakes there: a driver woken from its sync
/// on the core where a lone writer polled waited out the writer's whole poll (traced:
/// BENCHMARKS.md, "Measurements behind the code").
pub(crate) fn yield_to_a_waking_thread() {
    if tuned(Tuning::PollYield) {
        std::thread::yield_now();
    } else {
        std::hint::spin_loop();
    }
}

/// The CPUs the calling thread may run on (`None` where that cannot be asked).
pub fn allowed_cpus() -> Option<Vec<usize>> {
    #[cfg(target_os = "linux")]
    // SAFETY: sched_getaffinity fills the cpu_set_t we own, of the size we pass.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return None;
        }
        let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize).filter(|&cpu| libc::CPU_ISSET(cpu, &set)).collect();
        Some(cpus)
    }
    #[cfg(not(target_os = "linux"))]
    None
}

/// Runs the calling thread on `cpus` from now on. Best effort: where that fails (a
/// CPU went offline, another OS) the thread stays where it was allowed to run.
pub fn pin_current_thread(cpus: &[usize]) {
    #[cfg(target_os = "linux")]
    // SAFETY: sched_setaffinity on the calling thread (pid 0) with a cpu_set_t we own.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &cpu in cpus.iter().filter(|&&cpu| cpu < libc::CPU_SETSIZE as usize) {
            libc::CPU_SET(cpu, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cpus;
}
