//! Fax sending behind one trait, beside the text carrier: the Telnyx HTTP
//! adapter (`POST /v2/faxes`, in `super::super::telnyx`) or the simulated
//! carrier, which, like a real one, fetches the PDF from its URL itself
//! (through the guarded outbound client), checks it against the digest and
//! reports `delivered`, or `failed` on a mismatch or a failed fetch.

use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::service;
use crate::net::{NetError, Outbound, read_body};
use crate::phone::carrier::{SimMode, Simulated, Submission};

/// Largest PDF the simulated carrier fetches.
const MAX_MEDIA: usize = 20 * 1024 * 1024;

/// One fax to hand to the carrier.
#[derive(Debug, Clone)]
pub struct OutgoingFax {
    pub fax_id: i64,
    pub from: String,
    pub to: String,
    pub media_url: String,
    pub media_sha256: String,
    /// The carrier's fax application for the line (its profile).
    pub connection: Option<String>,
}

#[async_trait::async_trait]
pub trait FaxCarrier: Send + Sync + 'static {
    async fn send_fax(&self, f: &OutgoingFax) -> Submission;
}

/// The fax carrier of this server (a domain handle).
#[derive(Clone)]
pub struct Faxing(pub Arc<dyn FaxCarrier>);

/// The simulated carrier's fax side: the text carrier's mode decides the
/// answer; an accepted fax's PDF is then fetched and checked in the
/// background, and its status recorded as carrier events would.
pub struct SimulatedFax {
    sim: Simulated,
    outbound: Outbound,
    /// This server's public URL and a client for it: replies' PDFs are
    /// served there, on a loopback or private address in development.
    own: (String, Outbound),
    db: sea_orm::DatabaseConnection,
    writes: crate::db::WriteGate,
}

impl SimulatedFax {
    pub fn new(
        sim: Simulated,
        outbound: Outbound,
        own: (String, Outbound),
        db: sea_orm::DatabaseConnection,
        writes: crate::db::WriteGate,
    ) -> Self {
        SimulatedFax {
            sim,
            outbound,
            own,
            db,
            writes,
        }
    }
}

/// Fetches `url` and compares its SHA-256 with `expected`.
async fn fetch_and_check(outbound: &Outbound, url: String, expected: &str) -> Result<(), String> {
    let fetched = outbound
        .run(move |client| async move {
            let mut res = client.get(url).send().await.map_err(NetError::from)?;
            if !res.status().is_success() {
                return Err(NetError::Transport(format!("answered {}", res.status())));
            }
            read_body(&mut res, MAX_MEDIA).await
        })
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r.map_err(|e| e.to_string()));
    let body = fetched.map_err(|e| format!("the media could not be fetched: {e}"))?;
    if !body.starts_with(b"%PDF-") {
        return Err("the media is not a PDF".into());
    }
    let digest = hex::encode(Sha256::digest(&body));
    if digest != expected {
        return Err("the media does not match mediaSha256".into());
    }
    Ok(())
}

#[async_trait::async_trait]
impl FaxCarrier for SimulatedFax {
    async fn send_fax(&self, f: &OutgoingFax) -> Submission {
        self.sim.count_submission();
        match self.sim.mode() {
            SimMode::Reject => {
                return Submission::Rejected("the simulated carrier rejects faxes".into());
            }
            SimMode::Timeout => {
                return Submission::Unknown(
                    "the simulated carrier timed out after the request".into(),
                );
            }
            SimMode::Deliver => {}
        }
        let id = uuid::Uuid::new_v4().hyphenated().to_string();
        let own = f.media_url.starts_with(&format!("{}/", self.own.0));
        let outbound = if own {
            self.own.1.clone()
        } else {
            self.outbound.clone()
        };
        let (db, writes) = (self.db.clone(), self.writes.clone());
        let (url, digest, fax_id) = (f.media_url.clone(), f.media_sha256.clone(), id.clone());
        tokio::spawn(async move {
            let (status, reason) = match fetch_and_check(&outbound, url, &digest).await {
                Ok(()) => ("delivered", None),
                Err(why) => ("failed", Some(why)),
            };
            // The acceptance is recorded by the request; wait for it.
            for _ in 0..50 {
                match service::report(&db, &writes, &fax_id, status, reason.clone()).await {
                    Ok(true) => return,
                    Ok(false) => tokio::time::sleep(std::time::Duration::from_millis(100)).await,
                    Err(e) => {
                        tracing::warn!(error = %e, "simulated fax carrier: cannot record a status");
                        return;
                    }
                }
            }
        });
        Submission::Accepted {
            carrier_id: id,
            report: None,
        }
    }
}
