//! The stream store's WAL with no local disk: its log lives in an object store (one
//! object per batch) or in Postgres (one row per batch, in the ring of [`crate::ring`]).
//!
//! An append is acknowledged once its record is in that remote log; no node-local disk is
//! in the write path, so a node that dies loses nothing it acknowledged. The price is one
//! round trip per write to the log (tens of milliseconds to S3, a millisecond or two to
//! Postgres), which the group-commit machine ([`crate::group_commit`]) pays once per batch
//! instead of once per record: several batches in flight, acknowledgements in submission
//! order.
//!
//! - [`layout`]: where the object-store WAL's objects live (keys carrying the epoch), the
//!   registration that fences a taken-over node, and the recovery plan over a LIST
//!   ([`layout::plan_chain`]). The native S3 backend and the simulator both decide with it.
//! - [`lease`]: the second fence (`fence=lease`): the owner's lease in the registration,
//!   its renewals, when a returned PUT may be acknowledged without a read, and how long a
//!   claimer waits before it LISTs, with the argument why that loses nothing.
//! - [`recovery`]: the walk over the objects once read: each one's check
//!   ([`recovery::decode_object`]), what is kept, left out, deleted, or refused
//!   ([`recovery::walk_chain`], or one object at a time [`recovery::ChainWalk`]). The
//!   native S3 backend's recovery is its reads plus this.
//! - The simulated object store and Postgres that run the same decisions under chosen
//!   latencies and faults are in [`crate::sim::remote`].

pub mod layout;
pub mod lease;
pub mod recovery;
