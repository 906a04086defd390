//! The carrier behind one trait: [`Simulated`] (built in; the default when
//! `AGENTIC_CARRIER_URL` is unset, and the demo's).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// One message to hand to the carrier.
#[derive(Debug, Clone)]
pub struct Outgoing {
    pub message_id: i64,
    /// `sms` or `rcs` (never downgraded: rule 6).
    pub channel: String,
    pub from: String,
    pub to: String,
    pub text: String,
    pub messaging_profile: Option<String>,
}

/// What a submission came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Submission {
    /// The carrier took it; `report` is a delivery status it gave at once.
    Accepted {
        carrier_id: String,
        report: Option<String>,
    },
    /// The carrier refused it for good (e.g. the recipient cannot receive
    /// RCS: no SMS fallback).
    Rejected(String),
    /// Nothing reached the carrier (connection refused): safe to retry.
    NotSent(String),
    /// It may have been sent (timeout, connection cut after sending): held
    /// for an operator, never re-sent automatically (rule 10).
    Unknown(String),
}

#[async_trait::async_trait]
pub trait Carrier: Send + Sync + 'static {
    async fn submit(&self, m: &Outgoing) -> Submission;
}

/// How the simulated carrier answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimMode {
    /// Accepts and reports `delivered` at once.
    Deliver,
    /// Refuses every message.
    Reject,
    /// Behaves like a carrier that timed out after the request was sent.
    Timeout,
}

impl std::str::FromStr for SimMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "deliver" => Ok(SimMode::Deliver),
            "reject" => Ok(SimMode::Reject),
            "timeout" => Ok(SimMode::Timeout),
            other => Err(format!(
                "unknown simulated carrier mode '{other}' (deliver, reject or timeout)"
            )),
        }
    }
}

/// The built-in simulated carrier: a handle (registered for the domain) so
/// tests and operators can switch its mode while the server runs.
#[derive(Clone)]
pub struct Simulated {
    mode: Arc<parking_lot::Mutex<SimMode>>,
    submissions: Arc<AtomicU64>,
}

impl Simulated {
    pub fn new(mode: SimMode) -> Self {
        Simulated {
            mode: Arc::new(parking_lot::Mutex::new(mode)),
            submissions: Arc::new(AtomicU64::new(0)),
        }
    }

    pub fn set_mode(&self, mode: SimMode) {
        *self.mode.lock() = mode;
    }

    /// Submissions received so far (each one a send, texts and faxes).
    pub fn submissions(&self) -> u64 {
        self.submissions.load(Ordering::SeqCst)
    }

    /// Counts one submission.
    pub fn count_submission(&self) {
        self.submissions.fetch_add(1, Ordering::SeqCst);
    }

    pub fn mode(&self) -> SimMode {
        *self.mode.lock()
    }
}

#[async_trait::async_trait]
impl Carrier for Simulated {
    async fn submit(&self, m: &Outgoing) -> Submission {
        self.count_submission();
        match self.mode() {
            SimMode::Deliver => Submission::Accepted {
                carrier_id: format!("sim-{}-{}", m.message_id, uuid::Uuid::new_v4().simple()),
                report: Some("delivered".into()),
            },
            SimMode::Reject => {
                Submission::Rejected("the simulated carrier rejects messages".into())
            }
            SimMode::Timeout => {
                Submission::Unknown("the simulated carrier timed out after the request".into())
            }
        }
    }
}
