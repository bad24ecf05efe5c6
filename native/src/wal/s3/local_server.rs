//! A real S3-compatible server on 127.0.0.1 for tests: s3s-fs on a free port, with a
//! temporary root whose sub-directory is the bucket.
//!
//! s3s-fs keeps objects as files under its root, so its data survives a kill and a
//! restart on the same root and port ([`LocalS3::restart`]), which the server-restart
//! test uses. It is installed by `.ci/install-tools` (`cargo install s3s-fs --version
//! 0.14.1 --features binary`); `WALAB_S3S_FS` may name the binary. This file uses only
//! `std`, so the binary's integration tests include it too (`#[path]`).

#![allow(dead_code)]

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The access key every test server accepts.
pub const ACCESS_KEY: &str = "walab";
/// Its secret.
pub const SECRET_KEY: &str = "walab-secret-key";
/// The bucket every test server has.
pub const BUCKET: &str = "walab";
/// How long a start may take before the test gives up.
const START_WAIT_MAX: Duration = Duration::from_secs(20);

/// A running s3s-fs.
pub struct LocalS3 {
    child: Option<Child>,
    port: u16,
    root: PathBuf,
    /// Owns the temporary root; dropped last.
    _dir: Option<TempRoot>,
}

struct TempRoot(PathBuf);

impl Drop for TempRoot {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The s3s-fs binary: `$WALAB_S3S_FS`, else `~/.cargo/bin/s3s-fs`, else `s3s-fs` on PATH.
pub fn binary() -> PathBuf {
    if let Some(path) = std::env::var_os("WALAB_S3S_FS") {
        return PathBuf::from(path);
    }
    if let Some(home) = std::env::var_os("HOME") {
        let candidate = Path::new(&home).join(".cargo/bin/s3s-fs");
        if candidate.exists() {
            return candidate;
        }
    }
    PathBuf::from("s3s-fs")
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port on 127.0.0.1");
    listener.local_addr().expect("a bound listener has an address").port()
}

impl LocalS3 {
    /// Starts a server with a fresh temporary root and an empty bucket [`BUCKET`].
    /// Panics with a clear message when s3s-fs is missing (tests need the real thing).
    pub fn start() -> LocalS3 {
        let unique = format!(
            "walab-s3s-{}-{}",
            std::process::id(),
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
        );
        let root = std::env::temp_dir().join(unique);
        std::fs::create_dir_all(root.join(BUCKET)).expect("create the server's root and bucket");
        let mut server = LocalS3 { child: None, port: free_port(), root: root.clone(), _dir: Some(TempRoot(root)) };
        server.spawn();
        server
    }

    fn spawn(&mut self) {
        let binary = binary();
        let child = Command::new(&binary)
            .args(["--host", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
            .arg(&self.root)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| {
                panic!("cannot start {} ({error}); install it with .ci/install-tools", binary.display())
            });
        self.child = Some(child);
        let address = SocketAddr::from(([127, 0, 0, 1], self.port));
        let started = Instant::now();
        while TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_err() {
            if let Some(child) = &mut self.child {
                if let Ok(Some(status)) = child.try_wait() {
                    panic!("s3s-fs exited at start with {status} (port {} taken?)", self.port);
                }
            }
            assert!(started.elapsed() < START_WAIT_MAX, "s3s-fs did not listen on {address} within {START_WAIT_MAX:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The directory holding the bucket's objects as files.
    pub fn bucket_dir(&self) -> PathBuf {
        self.root.join(BUCKET)
    }

    /// Kills the server (SIGKILL) and waits for it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port and root: everything stored is still there.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// The environment a `walab` child needs to reach this server.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY.to_string()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.to_string()),
            ("AWS_REGION", "us-east-1".to_string()),
        ]
    }
}

impl Drop for LocalS3 {
    fn drop(&mut self) {
        self.kill();
    }
}
