//! A real S3-compatible server on 127.0.0.1 for tests: walab's own test server
//! ([`crate::s3_server`]: s3s-fs with atomic conditional PUTs, latency profiles and
//! faults) on a free port, in this process, with a temporary root whose sub-directory
//! is the bucket.
//!
//! The server keeps objects as files under its root, so its data survives a stop and a
//! start on the same root and port ([`LocalS3::restart`]), which the server-restart
//! test uses. Stopping it closes the listener and every open connection at once, as a
//! killed server would. `walab` child processes reach it over TCP like any server.

#![allow(dead_code)]

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::s3_server::{Control, LatencyProfile, Running, ServerConfig};

/// The access key every test server accepts.
pub const ACCESS_KEY: &str = "walab";
/// Its secret.
pub const SECRET_KEY: &str = "walab-secret-key";
/// The bucket every test server has.
pub const BUCKET: &str = "walab";
/// How long a restart may wait for its port before the test gives up.
const START_WAIT_MAX: Duration = Duration::from_secs(20);

/// A running test server.
pub struct LocalS3 {
    running: Option<Running>,
    port: u16,
    root: PathBuf,
    latency: LatencyProfile,
    control: Arc<Control>,
    /// Owns the temporary root; dropped last.
    _dir: Option<TempRoot>,
}

struct TempRoot(PathBuf);

impl Drop for TempRoot {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl LocalS3 {
    /// Starts a server with a fresh temporary root, an empty bucket [`BUCKET`] and no
    /// added latency.
    pub fn start() -> LocalS3 {
        LocalS3::start_with(LatencyProfile::none())
    }

    /// The same, with every request waiting as `latency` says.
    pub fn start_with(latency: LatencyProfile) -> LocalS3 {
        let unique = format!(
            "walab-s3-{}-{}",
            std::process::id(),
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
        );
        let root = std::env::temp_dir().join(unique);
        std::fs::create_dir_all(root.join(BUCKET)).expect("create the server's root and bucket");
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free port on 127.0.0.1");
        let port = listener.local_addr().expect("a bound listener has an address").port();
        let mut server = LocalS3 {
            running: None,
            port,
            root: root.clone(),
            latency,
            control: Arc::new(Control::default()),
            _dir: Some(TempRoot(root)),
        };
        server.serve(listener);
        server
    }

    fn serve(&mut self, listener: TcpListener) {
        let mut config = ServerConfig::new(&self.root, ACCESS_KEY, SECRET_KEY);
        config.latency = self.latency.clone();
        let running = Running::start(config, Arc::clone(&self.control), listener)
            .unwrap_or_else(|error| panic!("the test S3 server did not start: {error}"));
        self.running = Some(running);
    }

    /// `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// An `object_store` client builder for this server's bucket and keys (plain HTTP);
    /// callers add their own retry settings and build.
    pub fn client_builder(&self) -> object_store::aws::AmazonS3Builder {
        object_store::aws::AmazonS3Builder::new()
            .with_endpoint(self.endpoint())
            .with_bucket_name(BUCKET)
            .with_region("us-east-1")
            .with_access_key_id(ACCESS_KEY)
            .with_secret_access_key(SECRET_KEY)
            .with_allow_http(true)
    }

    /// The directory holding the bucket's objects as files.
    pub fn bucket_dir(&self) -> PathBuf {
        self.root.join(BUCKET)
    }

    /// Faults to inject, the PUT counter, the lock switch. They outlive a restart.
    pub fn control(&self) -> &Arc<Control> {
        &self.control
    }

    /// Stops the server: the port closes and every open connection drops.
    pub fn kill(&mut self) {
        if let Some(mut running) = self.running.take() {
            running.stop();
        }
    }

    /// Starts it again on the same port and root: everything stored is still there.
    pub fn restart(&mut self) {
        self.kill();
        let address = SocketAddr::from(([127, 0, 0, 1], self.port));
        let started = Instant::now();
        let listener = loop {
            match TcpListener::bind(address) {
                Ok(listener) => break listener,
                Err(error) => {
                    assert!(started.elapsed() < START_WAIT_MAX, "cannot listen on {address} again: {error}");
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        };
        self.serve(listener);
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
