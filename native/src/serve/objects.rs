//! Where committed objects go: any `object_store` (a local directory, an S3 bucket).
//!
//! Object `id` is the key `<prefix>/objects/<id, 20 digits>`. Ids come from the metadata
//! log's reservations and are never reused, so an upload never overwrites a committed
//! object. `object_store`'s local file system writes a temporary file and renames it
//! without syncing, so for a local directory the file and its directory are synced
//! after the PUT: the WAL is trimmed once a commit names the object, and the object must
//! then outlive a power cut as the WAL records would have.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

use crate::wal::s3;
use crate::wal::url::{parse_wal_url, WalUrl};

/// The objects of one node.
pub struct Objects {
    store: Arc<dyn ObjectStore>,
    prefix: String,
    /// For a local directory: where the files are, to sync them.
    local_dir: Option<PathBuf>,
    name: String,
    /// Objects stored (successful PUTs) since start.
    puts: AtomicU64,
}

impl Objects {
    /// Objects in a local directory (created if missing).
    pub fn local(dir: PathBuf) -> Result<Objects, String> {
        let objects_dir = dir.join("objects");
        std::fs::create_dir_all(&objects_dir).map_err(|error| format!("{}: {error}", objects_dir.display()))?;
        let store = LocalFileSystem::new_with_prefix(&dir).map_err(|error| format!("{}: {error}", dir.display()))?;
        Ok(Objects { store: Arc::new(store), prefix: String::new(), local_dir: Some(dir.clone()), name: format!("file://{}", dir.display()), puts: AtomicU64::new(0) })
    }

    /// Objects at `--objects URL`: `file:///DIR` or `s3://BUCKET/PATH` (with `--endpoint`).
    pub fn from_url(url: &str, endpoint: Option<&str>) -> Result<Objects, String> {
        match parse_wal_url(url).map_err(|error| error.replace("--wal", "--objects"))? {
            WalUrl::File(dir) => Objects::local(dir),
            WalUrl::S3 { bucket, path } => Ok(Objects {
                store: s3::connect(&bucket, endpoint)?,
                prefix: path.clone(),
                local_dir: None,
                name: format!("s3://{bucket}/{path}"),
                puts: AtomicU64::new(0),
            }),
            WalUrl::Postgres(_) => Err(format!("--objects {url}: use file:///DIR or s3://BUCKET/PATH")),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    fn key(&self, id: u64) -> Path {
        if self.prefix.is_empty() {
            Path::from(format!("objects/{id:020}"))
        } else {
            Path::from(format!("{}/objects/{id:020}", self.prefix))
        }
    }

    /// Whether object `id` exists (for tests and checks).
    pub async fn exists(&self, id: u64) -> Result<bool, String> {
        match self.store.head(&self.key(id)).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(error) => Err(format!("{}: object {id}: {error}", self.name)),
        }
    }

    /// Stores object `id` durably.
    pub async fn put(&self, id: u64, bytes: Vec<u8>) -> Result<(), String> {
        let key = self.key(id);
        self.store
            .put(&key, PutPayload::from(bytes))
            .await
            .map_err(|error| format!("{}: PUT object {id}: {error}", self.name))?;
        if let Some(dir) = &self.local_dir {
            let file = dir.join(key.as_ref());
            let objects_dir = dir.join("objects");
            let synced = tokio::task::spawn_blocking(move || {
                std::fs::File::open(&file)?.sync_all()?;
                std::fs::File::open(&objects_dir)?.sync_all()
            })
            .await
            .map_err(|error| format!("{}: sync object {id}: {error}", self.name))?;
            synced.map_err(|error| format!("{}: sync object {id}: {error}", self.name))?;
        }
        self.puts.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Objects stored since start.
    pub fn puts(&self) -> u64 {
        self.puts.load(Ordering::Relaxed)
    }

    /// Reads object `id`.
    pub async fn get(&self, id: u64) -> Result<Vec<u8>, String> {
        let result = self.store.get(&self.key(id)).await.map_err(|error| format!("{}: GET object {id}: {error}", self.name))?;
        let bytes = result.bytes().await.map_err(|error| format!("{}: GET object {id}: {error}", self.name))?;
        Ok(bytes.to_vec())
    }

    /// Deletes object `id`; one that is not there is fine.
    pub async fn delete(&self, id: u64) -> Result<(), String> {
        match self.store.delete(&self.key(id)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(error) => Err(format!("{}: DELETE object {id}: {error}", self.name)),
        }
    }
}
