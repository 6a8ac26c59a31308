//! The job handshake that comes before the first bucket: every party sends every other one
//! its settings (which must be equal), its row count and its checkpoint's run id; from the
//! same messages every party computes the same bucket plan and takes the same decision to
//! resume (exchanging finished-bucket bitmaps) or to start a new run (rank 0 draws its id).

use super::*;

/// Magic of the settings hello of two-party jobs ([`agree_settings`]), the first message on
/// the connection.
const SETTINGS_MAGIC: &[u8; 8] = b"OBLIVJS1";
/// Magic of the job-level handshake (before the protocol's own handshake in each bucket).
/// Version 2: the protocols run on the keys' 128-bit public hashes, not the keys themselves, so
/// a peer of version 1 would silently find nothing in common; the magic makes it an error.
/// Version 3: keys are encoded injectively (`csvio::push_key_field`), so their hashes differ.
/// Version 4: parties announce their row counts, not bucket counts, and pad every bucket
/// ([`crate::plan`]).
const JOB_MAGIC: &[u8; 8] = b"OBLIVJB4";
/// A party pads its buckets to at most this many times its rows (or [`MIN_PADDING_CAP`])
/// before it refuses a plan that the peers' row counts imply.
const MAX_PADDING_FACTOR: u64 = 16;
/// Padded keys a party always accepts, whatever its row count.
const MIN_PADDING_CAP: u64 = 1 << 24;
/// Longest job hello accepted from a peer.
const MAX_HELLO: usize = 4096;
/// The longest frame of the job handshake: a checkpointed run's finished-bucket map, one bit
/// per bucket (up to 2^23 buckets; the job hello is shorter).
pub(super) const JOB_FRAME_LIMIT: usize = 1 << 20;
/// What each party announces before the first bucket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct JobHello {
    /// The settings that must agree, as text (shown in the error when they do not).
    pub(super) params: String,
    /// This party's data rows in its whole input (all shards): the public size that the
    /// bucket plan is computed from.
    pub(super) rows: u64,
    /// Whether this party keeps a checkpoint.
    pub(super) checkpoint: bool,
    /// The run its checkpoint belongs to.
    pub(super) run: Option<RunInfo>,
}

impl JobHello {
    pub(super) fn encode(&self) -> Vec<u8> {
        let mut b = JOB_MAGIC.to_vec();
        let p = self.params.as_bytes();
        b.extend_from_slice(&(p.len() as u64).to_le_bytes());
        b.extend_from_slice(p);
        b.extend_from_slice(&self.rows.to_le_bytes());
        b.push(u8::from(self.checkpoint));
        let run = self.run.unwrap_or(RunInfo {
            id: [0; 16],
            buckets: 0,
        });
        b.extend_from_slice(&run.id);
        b.extend_from_slice(&run.buckets.to_le_bytes());
        b
    }

    pub(super) fn decode(b: &[u8]) -> Result<Self, CliError> {
        let bad = not_this_version;
        let u64_at = |i: usize| -> Result<u64, CliError> {
            let s = b.get(i..i + 8).ok_or_else(bad)?;
            let mut a = [0u8; 8];
            a.copy_from_slice(s);
            Ok(u64::from_le_bytes(a))
        };
        if b.get(..8) != Some(JOB_MAGIC.as_slice()) {
            return Err(bad());
        }
        let plen = usize::try_from(u64_at(8)?).map_err(|_| bad())?;
        let end = 16usize.checked_add(plen).ok_or_else(bad)?;
        let params =
            String::from_utf8(b.get(16..end).ok_or_else(bad)?.to_vec()).map_err(|_| bad())?;
        let rows = u64_at(end)?;
        let checkpoint = match b.get(end + 8) {
            Some(0) => false,
            Some(1) => true,
            _ => return Err(bad()),
        };
        let id: [u8; 16] = b
            .get(end + 9..end + 25)
            .and_then(|s| s.try_into().ok())
            .ok_or_else(bad)?;
        let run_buckets = u64_at(end + 25)?;
        if b.len() != end + 33 {
            return Err(bad());
        }
        Ok(JobHello {
            params,
            rows,
            checkpoint,
            run: (id != [0; 16]).then_some(RunInfo {
                id,
                buckets: run_buckets,
            }),
        })
    }
}

/// Agrees with every peer on the settings, the bucket plan and where to resume.
///
/// Returns the plan (computed from every party's announced row count) and, for a
/// checkpointed run, the buckets every party finished (recorded in `cp`). Every party takes
/// the same decisions from the same hellos.
pub(super) fn agree<C: Channel>(
    cfg: &PartyConfig,
    own_rows: u64,
    session: &mut Session<C>,
    cp: Option<&mut Checkpoint>,
) -> Result<BucketPlan, CliError> {
    let params = settings(cfg);
    let ours = JobHello {
        params,
        rows: own_rows,
        checkpoint: cp.is_some(),
        run: cp.as_ref().and_then(|c| c.run()),
    };
    agree_on(cfg, own_rows, session, cp, ours)
}

/// The settings every party must run with, as text (shown in the error when they differ).
pub(super) fn settings(cfg: &PartyConfig) -> String {
    let mut params = format!(
        "protocol={} curve={} receiver={} broadcast={} shard={} bucket_load={}",
        cfg.protocol,
        if uses_curve(cfg.protocol) {
            cfg.curve.to_string()
        } else {
            "-".into()
        },
        cfg.receiver,
        cfg.broadcast,
        cfg.shard,
        cfg.bucket_load
    );
    // Only when not 1, so that a one-worker run still agrees with a peer of the version
    // before `--workers` existed (same messages), and a peer of that version facing more
    // workers sees the difference in the settings it is shown.
    if cfg.workers != 1 {
        params.push_str(&format!(" workers={}", cfg.workers));
    }
    params
}

/// Two parties: exchanges the settings on `ch` with the peer before the bucket driver's
/// set-up (which runs while the input is read), so that parties that differ (in the worker
/// count, say, which shapes the set-up's messages) stop here with both settings shown, as
/// they would in the job handshake. The job handshake compares them again.
///
/// # Errors
/// [`ExitKind::Protocol`](crate::ExitKind::Protocol) if the peer's settings differ or its
/// message is not a settings hello of this version; network errors.
pub(super) fn agree_settings<C: Channel + ?Sized>(
    cfg: &PartyConfig,
    ch: &mut C,
) -> Result<(), CliError> {
    let ours = settings(cfg);
    let mut msg = SETTINGS_MAGIC.to_vec();
    msg.extend_from_slice(ours.as_bytes());
    ch.send(&msg)?;
    ch.flush()?;
    let reply = ch.recv_max(MAX_HELLO)?;
    let theirs = reply
        .strip_prefix(SETTINGS_MAGIC.as_slice())
        .and_then(|t| std::str::from_utf8(t).ok())
        .ok_or_else(not_this_version)?;
    if theirs != ours {
        return Err(CliError::protocol(format!(
            "party {} runs {{{theirs}}}, this party runs {{{ours}}}",
            1 - cfg.rank.min(1)
        )));
    }
    Ok(())
}

/// The error for a peer's first message that is not of this version.
fn not_this_version() -> CliError {
    CliError::protocol(
        "the peer's first message is not an obliv psi job handshake of this version (is it \
         running another version of obliv?)",
    )
}

/// [`agree`] with this party's hello built.
fn agree_on<C: Channel>(
    cfg: &PartyConfig,
    own_rows: u64,
    session: &mut Session<C>,
    cp: Option<&mut Checkpoint>,
    ours: JobHello,
) -> Result<BucketPlan, CliError> {
    let peers: Vec<usize> = session.peers().collect();
    let msg = ours.encode();
    for &p in &peers {
        let ch = session.channel(p)?;
        ch.send(&msg)?;
        ch.flush()?;
    }
    let mut hellos = vec![ours.clone()];
    let mut rows = vec![0u64; cfg.protocol.parties().max(cfg.rank + 1)];
    rows[cfg.rank] = own_rows;
    for &p in &peers {
        let theirs = JobHello::decode(&session.channel(p)?.recv_max(MAX_HELLO)?)?;
        if theirs.params != ours.params {
            return Err(CliError::protocol(format!(
                "party {p} runs {{{}}}, this party runs {{{}}}",
                theirs.params, ours.params
            )));
        }
        if let Some(r) = rows.get_mut(p) {
            *r = theirs.rows;
        }
        hellos.push(theirs);
    }
    let plan = BucketPlan::new(&rows, cfg.shard.count, cfg.bucket_load, cfg.workers as u64)?;
    // A local memory limit: refused here, on every party alike only if all set it alike.
    if plan.largest() > cfg.bucket_size as u64 {
        return Err(CliError::usage(format!(
            "the job's buckets hold up to {} keys (padded; rows per party {rows:?}, {} buckets \
             per shard), above --bucket-size {}; raise it or split the job with --shard",
            plan.largest(),
            plan.buckets,
            cfg.bucket_size
        )));
    }
    // The peers' row counts set the bucket count, so a peer that overstates its rows would
    // make this party pad many small buckets: its padded total is capped (with room for the
    // genuinely unbalanced case, which stays far below it).
    let own_total = plan.bound(cfg.rank).saturating_mul(plan.runs());
    let cap = own_rows
        .saturating_mul(MAX_PADDING_FACTOR)
        .max(MIN_PADDING_CAP);
    if own_total > cap {
        return Err(CliError::usage(format!(
            "the peers' row counts ({rows:?}) would make this party pad its {own_rows} rows to \
             {own_total} keys over {} buckets; refused (raise --bucket-load on every party to \
             use fewer buckets)",
            plan.runs()
        )));
    }
    let total = plan.buckets;
    if !hellos.iter().any(|h| h.checkpoint) {
        return Ok(plan);
    }
    let resume = hellos
        .iter()
        .all(|h| h.checkpoint && h.run.is_some_and(|r| r.buckets == total) && h.run == ours.run);
    let bitmap_len = usize::try_from(total.div_ceil(8)).unwrap_or(usize::MAX);
    if bitmap_len > JOB_FRAME_LIMIT {
        return Err(CliError::usage(format!(
            "a checkpointed job of {total} buckets is above the {} buckets a checkpoint \
             supports; raise --bucket-load or split the job with --shard",
            JOB_FRAME_LIMIT * 8
        )));
    }
    if resume {
        let Some(cp) = cp else {
            return Err(CliError::protocol("checkpoint state lost"));
        };
        let mut common = cp.finished_bitmap(total);
        for &p in &peers {
            session.channel(p)?.send(&common)?;
        }
        session.flush_all()?;
        for &p in &peers {
            let theirs = session.channel(p)?.recv_max(bitmap_len)?;
            if theirs.len() != bitmap_len {
                return Err(CliError::protocol(format!(
                    "party {p} sent a finished-bucket map of {} bytes, not {bitmap_len}",
                    theirs.len()
                )));
            }
            for (c, t) in common.iter_mut().zip(&theirs) {
                *c &= t;
            }
        }
        let mine = cp.finished_count();
        cp.keep_common(&common);
        progress::note(
            cfg.progress,
            &format!(
                "checkpoint: resuming; {} of {total} buckets finished on every side \
                 ({mine} here)",
                cp.finished_count()
            ),
        );
        return Ok(plan);
    }
    // A new run: rank 0 draws its id and tells everybody.
    let id = if cfg.rank == 0 {
        let mut id = [0u8; 16];
        while id == [0; 16] {
            AesRng::from_entropy().fill_bytes(&mut id);
        }
        for &p in &peers {
            session.channel(p)?.send(&id)?;
        }
        session.flush_all()?;
        id
    } else {
        let id: [u8; 16] = session.channel(0)?.recv_array()?;
        if id == [0; 16] {
            return Err(CliError::protocol("party 0 sent an empty run id"));
        }
        id
    };
    if let Some(cp) = cp {
        if cp.run().is_some() {
            progress::note(
                cfg.progress,
                "checkpoint: the parties hold no common run to resume (a peer started afresh \
                 or has another bucket count); starting over",
            );
        }
        if hellos.iter().any(|h| !h.checkpoint) {
            progress::note(
                cfg.progress,
                "checkpoint: a peer runs without --checkpoint; a rerun after a failure will \
                 start over",
            );
        }
        cp.start_run(RunInfo { id, buckets: total })?;
    }
    Ok(plan)
}
