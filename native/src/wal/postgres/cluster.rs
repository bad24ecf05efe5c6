//! Throwaway Postgres clusters for tests and for `crash-test --kill-postmaster`.
//!
//! Some behaviours of the Postgres WAL can only be shown on a server the test owns: one
//! started with `fsync = off`, a standby made with `pg_basebackup` and then promoted, a
//! postmaster killed with SIGKILL in the middle of a load. [`Cluster::init`] makes one
//! with the Debian binaries: `initdb` into a fresh directory, a free port on 127.0.0.1,
//! the socket in the data directory (so it never collides with the system server), and
//! `pg_ctl start`. `initdb` refuses to run as root, so when walab runs as root (CI does)
//! every server command runs as the `postgres` OS user through `runuser`.
//!
//! Dropping a [`Cluster`] stops its server immediately and removes its directory, so a
//! failing test still cleans up after itself (a panic unwinds through the drop).
//!
//! This file uses only `std` so that the integration tests can include it with
//! `#[path]` as well.

#![allow(dead_code)] // each includer uses a different part

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Where Debian puts the Postgres 15 binaries.
pub const BIN_DIR: &str = "/usr/lib/postgresql/15/bin";
/// The OS user the server runs as.
pub const SERVER_USER: &str = "postgres";
/// How long to wait for a server to start, stop or die.
pub const WAIT_MAX: Duration = Duration::from_secs(30);

/// Runs a Postgres binary as the server's OS user (through `runuser` when we are root).
pub fn server_command(binary: &str) -> Command {
    let path = Path::new(BIN_DIR).join(binary);
    if is_root() {
        let mut command = Command::new("runuser");
        command.args(["-u", SERVER_USER, "--"]).arg(path);
        command
    } else {
        Command::new(path)
    }
}

fn is_root() -> bool {
    // SAFETY-free check: `id -u` would be a process; /proc/self/status has the uid.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find(|l| l.starts_with("Uid:")).and_then(|l| l.split_whitespace().nth(1).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

fn run(mut command: Command, what: &str) -> Result<Output, String> {
    let output = command.stdin(Stdio::null()).output().map_err(|e| format!("{what}: cannot run: {e}"))?;
    if output.status.success() {
        Ok(output)
    } else {
        Err(format!(
            "{what}: {}: {}{}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim(),
            String::from_utf8_lossy(&output.stdout).trim()
        ))
    }
}

/// A free TCP port on 127.0.0.1 (free when asked; the server binds it right after).
pub fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    listener.local_addr().map(|a| a.port()).map_err(|e| format!("no free port: {e}"))
}

/// The postmaster's pid, from the first line of `postmaster.pid`.
pub fn postmaster_pid(data_dir: &Path) -> Option<i32> {
    let text = std::fs::read_to_string(data_dir.join("postmaster.pid")).ok()?;
    text.lines().next()?.trim().parse().ok()
}

fn process_alive(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|stat| stat.split_whitespace().nth(2).is_none_or(|state| state != "Z"))
            .unwrap_or(false)
}

/// Kills the postmaster of `data_dir` with SIGKILL and waits until it and every server
/// process that still uses the directory are gone (a restart before that fails).
pub fn kill_postmaster(data_dir: &Path) -> Result<(), String> {
    let pid = postmaster_pid(data_dir).ok_or_else(|| format!("{}: no postmaster.pid", data_dir.display()))?;
    let status = Command::new("kill").args(["-9", &pid.to_string()]).status().map_err(|e| format!("kill: {e}"))?;
    if !status.success() {
        return Err(format!("kill -9 {pid}: {status}"));
    }
    let started = Instant::now();
    while process_alive(pid) || !children_gone(pid) {
        if started.elapsed() > WAIT_MAX {
            return Err(format!("postmaster {pid} still alive after SIGKILL"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// True when no process has `parent` as its parent any more (backends notice the
/// postmaster's death and exit on their own, but not instantly).
fn children_gone(parent: i32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else { return true };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // Fields after the command name (which may hold spaces) start after ')'.
        let Some(rest) = stat.rsplit_once(')').map(|(_, rest)| rest) else { continue };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() > 1 && fields[1] == parent.to_string() && fields[0] != "Z" {
            return false;
        }
    }
    true
}

/// Starts (or restarts) the server of `data_dir`, waiting until it accepts connections.
/// Retries a few times: right after a SIGKILL the old shared memory can linger a moment.
pub fn start_server(data_dir: &Path) -> Result<(), String> {
    let log = data_dir.join("server.log");
    let mut last = String::new();
    for _ in 0..20 {
        let mut command = server_command("pg_ctl");
        command.arg("-D").arg(data_dir).arg("-l").arg(&log).args(["-w", "-t", "30", "start"]);
        match run(command, "pg_ctl start") {
            Ok(_) => return Ok(()),
            Err(error) => last = error,
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let tail = std::fs::read_to_string(&log).unwrap_or_default();
    let tail: Vec<&str> = tail.lines().rev().take(5).collect();
    Err(format!("{last} (log: {})", tail.join(" | ")))
}

/// Stops the server of `data_dir` (`-m immediate`: nothing to save in a throwaway).
pub fn stop_server(data_dir: &Path) -> Result<(), String> {
    let mut command = server_command("pg_ctl");
    command.arg("-D").arg(data_dir).args(["-m", "immediate", "-w", "stop"]);
    run(command, "pg_ctl stop").map(|_| ())
}

/// A server in a directory of its own, removed on drop.
pub struct Cluster {
    /// The directory `mktemp` made; the data directory is `root/data`.
    root: PathBuf,
    pub data_dir: PathBuf,
    pub port: u16,
}

impl Cluster {
    /// `initdb` (trust auth, user `postgres`) with these extra `postgresql.conf` lines,
    /// then start.
    pub fn init(settings: &[(&str, &str)]) -> Result<Cluster, String> {
        let root = make_root()?;
        let data_dir = root.join("data");
        let port = free_port()?;
        let cluster = Cluster { root, data_dir, port };
        let mut initdb = server_command("initdb");
        initdb.arg("-D").arg(&cluster.data_dir).args(["-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"]);
        run(initdb, "initdb")?;
        let mut conf = format!(
            "\nport = {port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\nmax_wal_senders = 4\nwal_level = replica\nshared_buffers = 32MB\n",
            cluster.data_dir.display()
        );
        for (name, value) in settings {
            conf.push_str(&format!("{name} = {value}\n"));
        }
        append(&cluster.data_dir.join("postgresql.conf"), &conf)?;
        append(&cluster.data_dir.join("pg_hba.conf"), "\nhost replication all 127.0.0.1/32 trust\n")?;
        start_server(&cluster.data_dir)?;
        Ok(cluster)
    }

    /// A standby of this server: `pg_basebackup -R -X stream -c fast`, started on its
    /// own port. With `synchronous` the primary names it in `synchronous_standby_names`.
    pub fn standby(&self) -> Result<Cluster, String> {
        let root = make_root()?;
        let data_dir = root.join("data");
        let port = free_port()?;
        let standby = Cluster { root, data_dir, port };
        let mut backup = server_command("pg_basebackup");
        backup
            .arg("-D")
            .arg(&standby.data_dir)
            .args(["-R", "-X", "stream", "-c", "fast", "-h", "127.0.0.1", "-U", "postgres"])
            .arg("-p")
            .arg(self.port.to_string());
        run(backup, "pg_basebackup")?;
        let conf = format!(
            "\nport = {port}\nunix_socket_directories = '{}'\n",
            standby.data_dir.display()
        );
        append(&standby.data_dir.join("postgresql.conf"), &conf)?;
        let _ = std::fs::remove_file(standby.data_dir.join("postmaster.pid"));
        start_server(&standby.data_dir)?;
        Ok(standby)
    }

    /// `pg_ctl promote`, waiting until the standby takes writes.
    pub fn promote(&self) -> Result<(), String> {
        let mut command = server_command("pg_ctl");
        command.arg("-D").arg(&self.data_dir).args(["-w", "promote"]);
        run(command, "pg_ctl promote").map(|_| ())
    }

    /// Runs one SQL command with `psql` (for test set-up only).
    pub fn psql(&self, sql: &str) -> Result<String, String> {
        let mut command = Command::new(Path::new(BIN_DIR).join("psql"));
        command
            .args(["-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .arg("-p")
            .arg(self.port.to_string());
        run(command, "psql").map(|output| String::from_utf8_lossy(&output.stdout).trim().to_string())
    }

    /// The URL of database `postgres` on this server.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    pub fn kill_postmaster(&self) -> Result<(), String> {
        kill_postmaster(&self.data_dir)
    }

    pub fn start(&self) -> Result<(), String> {
        start_server(&self.data_dir)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if postmaster_pid(&self.data_dir).is_some() {
            let _ = stop_server(&self.data_dir);
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn make_root() -> Result<PathBuf, String> {
    let output = run(
        {
            let mut command = Command::new("mktemp");
            command.args(["-d", "/tmp/walab-pg.XXXXXXXX"]);
            command
        },
        "mktemp",
    )?;
    let root = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    if is_root() {
        let mut chown = Command::new("chown");
        chown.arg(format!("{SERVER_USER}:")).arg(&root);
        run(chown, "chown")?;
    }
    Ok(root)
}

fn append(path: &Path, text: &str) -> Result<(), String> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    file.write_all(text.as_bytes()).map_err(|e| format!("{}: {e}", path.display()))
}
