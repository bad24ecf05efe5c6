//! The S3 implementation the server runs: s3s-fs's, behind a per-key lock, a latency
//! draw and the fault table.
//!
//! s3s-fs decides a conditional PUT by looking at the file and then writing it, two
//! steps with nothing between them held: two PUTs with `If-None-Match: *` for one key
//! can both find it absent and both succeed, and two `If-Match` PUTs carrying the same
//! ETag can both match. S3 decides the condition and the write as one step. So here
//! every request that writes a key (PUT, COPY onto it, DELETE, the multipart
//! completion) takes that key's lock exclusively, and every read of it (GET, HEAD)
//! takes it shared; a conditional PUT checks its precondition itself, under the
//! exclusive lock, and only then hands s3s-fs an unconditional write. Reads under the
//! shared lock also never see a half-replaced object (s3s-fs writes the data file, then
//! the ETag beside it).

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use s3s::dto::*;
use s3s::{s3_error, S3ErrorCode, S3Request, S3Response, S3Result, S3};
use tokio::sync::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};
use walab_core::rng::Rng;

use super::faults::{Control, PutFault};
use super::latency::{LatencyProfile, RequestKind};

/// Set on a request whose connection must close without an answer: the HTTP layer
/// (see [`super::serve`]) puts one in each request's extensions and reads it after.
#[derive(Clone, Debug, Default)]
pub struct DropConnection(pub Arc<AtomicBool>);

type KeyId = (String, String);

/// One reader-writer lock per (bucket, key) that some request holds or waits for;
/// entries go when their last user does.
#[derive(Default)]
struct KeyLocks {
    locks: Mutex<HashMap<KeyId, Arc<RwLock<()>>>>,
}

enum Held {
    Shared(#[allow(dead_code)] OwnedRwLockReadGuard<()>),
    Exclusive(#[allow(dead_code)] OwnedRwLockWriteGuard<()>),
}

/// A held key lock; releasing it forgets the key's entry once no one else uses it.
struct KeyGuard<'a> {
    locks: &'a KeyLocks,
    id: KeyId,
    held: Option<Held>,
}

impl Drop for KeyGuard<'_> {
    fn drop(&mut self) {
        drop(self.held.take());
        let mut locks = self.locks.locks.lock().expect("key locks");
        if locks.get(&self.id).is_some_and(|lock| Arc::strong_count(lock) == 1) {
            locks.remove(&self.id);
        }
    }
}

impl KeyLocks {
    fn entry(&self, id: &KeyId) -> Arc<RwLock<()>> {
        let mut locks = self.locks.lock().expect("key locks");
        Arc::clone(locks.entry(id.clone()).or_default())
    }

    async fn exclusive(&self, bucket: &str, key: &str) -> KeyGuard<'_> {
        let id = (bucket.to_string(), key.to_string());
        let held = Held::Exclusive(self.entry(&id).write_owned().await);
        KeyGuard { locks: self, id, held: Some(held) }
    }

    async fn shared(&self, bucket: &str, key: &str) -> KeyGuard<'_> {
        let id = (bucket.to_string(), key.to_string());
        let held = Held::Shared(self.entry(&id).read_owned().await);
        KeyGuard { locks: self, id, held: Some(held) }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.locks.lock().expect("key locks").len()
    }
}

/// s3s-fs with atomic conditional writes, latency and faults.
pub struct Store {
    inner: s3s_fs::FileSystem,
    locks: KeyLocks,
    latency: LatencyProfile,
    rng: Mutex<Rng>,
    control: Arc<Control>,
}

impl Store {
    pub fn new(inner: s3s_fs::FileSystem, latency: LatencyProfile, seed: u64, control: Arc<Control>) -> Store {
        Store { inner, locks: KeyLocks::default(), latency, rng: Mutex::new(Rng::new(seed)), control }
    }

    /// Counts one request of `kind` and waits its drawn latency.
    async fn wait(&self, kind: RequestKind) {
        self.control.count_request(kind);
        if !self.latency.adds_latency() {
            return;
        }
        let wait = self.latency.draw(kind, &mut self.rng.lock().expect("latency rng"));
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }

    /// The key's lock for a write, unless locking is switched off.
    async fn exclusive(&self, bucket: &str, key: &str) -> Option<KeyGuard<'_>> {
        if self.control.locking() {
            Some(self.locks.exclusive(bucket, key).await)
        } else {
            None
        }
    }

    async fn shared(&self, bucket: &str, key: &str) -> Option<KeyGuard<'_>> {
        if self.control.locking() {
            Some(self.locks.shared(bucket, key).await)
        } else {
            None
        }
    }

    /// The object's current ETag, `None` if there is no such object.
    async fn current_e_tag<T>(&self, like: &S3Request<T>, bucket: &str, key: &str) -> S3Result<Option<ETag>> {
        let head = S3Request {
            input: HeadObjectInput { bucket: bucket.to_string(), key: key.to_string(), ..Default::default() },
            method: http::Method::HEAD,
            uri: like.uri.clone(),
            headers: http::HeaderMap::new(),
            extensions: http::Extensions::new(),
            credentials: like.credentials.clone(),
            region: like.region.clone(),
            service: like.service.clone(),
            trailing_headers: None,
        };
        match self.inner.head_object(head).await {
            Ok(response) => Ok(Some(response.output.e_tag.unwrap_or_else(|| ETag::Strong(String::new())))),
            Err(error) if *error.code() == S3ErrorCode::NoSuchKey => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// `If-None-Match` and `If-Match` against the object as it is now.
    async fn check_preconditions<T>(
        &self,
        like: &S3Request<T>,
        bucket: &str,
        key: &str,
        if_none_match: Option<&IfNoneMatch>,
        if_match: Option<&IfMatch>,
    ) -> S3Result<()> {
        if if_none_match.is_none() && if_match.is_none() {
            return Ok(());
        }
        let current = self.current_e_tag(like, bucket, key).await?;
        if let Some(condition) = if_none_match {
            let refused = match (condition, &current) {
                (_, None) => false,
                (ETagCondition::Any, Some(_)) => true,
                (ETagCondition::ETag(tag), Some(current)) => current.weak_cmp(tag),
            };
            if refused {
                return Err(s3_error!(PreconditionFailed, "At least one of the pre-conditions you specified did not hold"));
            }
        }
        if let Some(condition) = if_match {
            let holds = match (condition, &current) {
                (_, None) => false,
                (ETagCondition::Any, Some(_)) => true,
                (ETagCondition::ETag(tag), Some(current)) => current.strong_cmp(tag),
            };
            if !holds {
                return Err(s3_error!(PreconditionFailed, "At least one of the pre-conditions you specified did not hold"));
            }
        }
        Ok(())
    }

    fn drop_connection<T>(req: &S3Request<T>) {
        if let Some(flag) = req.extensions.get::<DropConnection>() {
            flag.0.store(true, Ordering::SeqCst);
        }
    }
}

#[async_trait::async_trait]
impl S3 for Store {
    async fn put_object(&self, mut req: S3Request<PutObjectInput>) -> S3Result<S3Response<PutObjectOutput>> {
        self.wait(RequestKind::Put).await;
        let (bucket, key) = (req.input.bucket.clone(), req.input.key.clone());
        let _guard = self.exclusive(&bucket, &key).await;
        // Counted once it holds the lock: a PUT that has its number is the key's writer.
        let fault = self.control.next_put();
        match fault {
            Some(PutFault::Fail) => return Err(s3_error!(InternalError, "injected fault: this PUT fails")),
            Some(PutFault::DropBeforeWrite) => {
                Self::drop_connection(&req);
                return Err(s3_error!(InternalError, "injected fault: connection dropped"));
            }
            _ => {}
        }
        let if_none_match = req.input.if_none_match.take();
        let if_match = req.input.if_match.take();
        self.check_preconditions(&req, &bucket, &key, if_none_match.as_ref(), if_match.as_ref()).await?;
        if let Some(PutFault::Stall(stall)) = fault {
            tokio::time::sleep(stall).await;
        }
        let drop_flag = req.extensions.get::<DropConnection>().cloned();
        let response = self.inner.put_object(req).await;
        if let (Some(PutFault::DropAfterWrite), Some(flag)) = (fault, drop_flag) {
            flag.0.store(true, Ordering::SeqCst);
        }
        response
    }

    async fn get_object(&self, req: S3Request<GetObjectInput>) -> S3Result<S3Response<GetObjectOutput>> {
        self.wait(RequestKind::Get).await;
        let _guard = self.shared(&req.input.bucket, &req.input.key).await;
        self.inner.get_object(req).await
    }

    async fn head_object(&self, req: S3Request<HeadObjectInput>) -> S3Result<S3Response<HeadObjectOutput>> {
        self.wait(RequestKind::Head).await;
        let _guard = self.shared(&req.input.bucket, &req.input.key).await;
        self.inner.head_object(req).await
    }

    async fn delete_object(&self, req: S3Request<DeleteObjectInput>) -> S3Result<S3Response<DeleteObjectOutput>> {
        self.wait(RequestKind::Delete).await;
        let _guard = self.exclusive(&req.input.bucket, &req.input.key).await;
        self.inner.delete_object(req).await
    }

    async fn delete_objects(&self, req: S3Request<DeleteObjectsInput>) -> S3Result<S3Response<DeleteObjectsOutput>> {
        self.wait(RequestKind::Delete).await;
        // Every key's lock, taken in one order (sorted) so that two bulk deletes cannot
        // wait for each other.
        let keys: BTreeSet<String> = req.input.delete.objects.iter().map(|object| object.key.clone()).collect();
        let bucket = req.input.bucket.clone();
        let mut guards = Vec::with_capacity(keys.len());
        for key in &keys {
            guards.push(self.exclusive(&bucket, key).await);
        }
        let response = self.inner.delete_objects(req).await;
        drop(guards);
        response
    }

    async fn copy_object(&self, req: S3Request<CopyObjectInput>) -> S3Result<S3Response<CopyObjectOutput>> {
        self.wait(RequestKind::Put).await;
        let _guard = self.exclusive(&req.input.bucket, &req.input.key).await;
        self.inner.copy_object(req).await
    }

    async fn list_objects(&self, req: S3Request<ListObjectsInput>) -> S3Result<S3Response<ListObjectsOutput>> {
        self.wait(RequestKind::List).await;
        self.inner.list_objects(req).await
    }

    async fn list_objects_v2(&self, req: S3Request<ListObjectsV2Input>) -> S3Result<S3Response<ListObjectsV2Output>> {
        self.wait(RequestKind::List).await;
        self.inner.list_objects_v2(req).await
    }

    async fn list_buckets(&self, req: S3Request<ListBucketsInput>) -> S3Result<S3Response<ListBucketsOutput>> {
        self.wait(RequestKind::List).await;
        self.inner.list_buckets(req).await
    }

    async fn create_bucket(&self, req: S3Request<CreateBucketInput>) -> S3Result<S3Response<CreateBucketOutput>> {
        self.wait(RequestKind::Put).await;
        self.inner.create_bucket(req).await
    }

    async fn delete_bucket(&self, req: S3Request<DeleteBucketInput>) -> S3Result<S3Response<DeleteBucketOutput>> {
        self.wait(RequestKind::Delete).await;
        self.inner.delete_bucket(req).await
    }

    async fn head_bucket(&self, req: S3Request<HeadBucketInput>) -> S3Result<S3Response<HeadBucketOutput>> {
        self.wait(RequestKind::Head).await;
        self.inner.head_bucket(req).await
    }

    async fn get_bucket_location(
        &self,
        req: S3Request<GetBucketLocationInput>,
    ) -> S3Result<S3Response<GetBucketLocationOutput>> {
        self.wait(RequestKind::Head).await;
        self.inner.get_bucket_location(req).await
    }

    async fn create_multipart_upload(
        &self,
        req: S3Request<CreateMultipartUploadInput>,
    ) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
        self.wait(RequestKind::Put).await;
        self.inner.create_multipart_upload(req).await
    }

    async fn upload_part(&self, req: S3Request<UploadPartInput>) -> S3Result<S3Response<UploadPartOutput>> {
        self.wait(RequestKind::Put).await;
        self.inner.upload_part(req).await
    }

    async fn upload_part_copy(&self, req: S3Request<UploadPartCopyInput>) -> S3Result<S3Response<UploadPartCopyOutput>> {
        self.wait(RequestKind::Put).await;
        self.inner.upload_part_copy(req).await
    }

    async fn list_parts(&self, req: S3Request<ListPartsInput>) -> S3Result<S3Response<ListPartsOutput>> {
        self.wait(RequestKind::List).await;
        self.inner.list_parts(req).await
    }

    async fn complete_multipart_upload(
        &self,
        req: S3Request<CompleteMultipartUploadInput>,
    ) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
        self.wait(RequestKind::Put).await;
        // s3s-fs checks this call's conditions itself; under the key's lock that check
        // and the write are one step too.
        let _guard = self.exclusive(&req.input.bucket, &req.input.key).await;
        self.inner.complete_multipart_upload(req).await
    }

    async fn abort_multipart_upload(
        &self,
        req: S3Request<AbortMultipartUploadInput>,
    ) -> S3Result<S3Response<AbortMultipartUploadOutput>> {
        self.wait(RequestKind::Delete).await;
        self.inner.abort_multipart_upload(req).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_lock_is_forgotten_once_released() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let locks = KeyLocks::default();
        runtime.block_on(async {
            let first = locks.shared("b", "k").await;
            let second = locks.shared("b", "k").await;
            assert_eq!(locks.len(), 1);
            drop(first);
            assert_eq!(locks.len(), 1, "still held by the second reader");
            drop(second);
            assert_eq!(locks.len(), 0);
            let writer = locks.exclusive("b", "k").await;
            assert_eq!(locks.len(), 1);
            drop(writer);
            assert_eq!(locks.len(), 0);
        });
    }
}
