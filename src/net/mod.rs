//! Outbound HTTP, built once for every caller (seller agents, webhooks,
//! catalog feeds, the carrier), behind an SSRF guard.
//!
//! - [`guard`]: the TCP connector resolves names itself and refuses every
//!   address that is not public ([`crate::types::is_public_ip`]) unless
//!   [`UrlPolicy::allow_insecure`] is set. The check runs at connect time on
//!   the addresses actually dialled, so a name that passed
//!   [`crate::types::OutboundUrl`] at registration and later resolves to
//!   127.0.0.1, 10.x or 169.254.169.254 (DNS rebinding) is still refused,
//!   and so is an IP literal or a pre-resolved address.
//! - [`build_client`]: an awc client on that connector that never follows
//!   redirects (a redirect is answered as-is, so it cannot lead elsewhere),
//!   with a request timeout and our `User-Agent`. [`read_body`] reads a
//!   response with a size limit.
//! - [`Outbound`]: awc clients are `!Send` (one per thread); `Outbound` owns
//!   one client on its own thread and runs work on it for any task, `Send`
//!   or not, so domain handles (which must be `Send + Sync`) can hold it.
//!   Dropping the future returned by [`Outbound::run`] cancels the work.

pub mod guard;

use std::future::Future;
use std::time::Duration;

use awc::error::{PayloadError, SendRequestError};
use futures_util::StreamExt;
use futures_util::future::LocalBoxFuture;

use crate::types::UrlPolicy;

pub use guard::{GuardedResolve, Refused, SystemResolver};

/// Limits and identity of outbound requests.
#[derive(Debug, Clone)]
pub struct OutboundOptions {
    /// From sending a request to its response head (awc's request timeout).
    pub request_timeout: Duration,
    /// TCP connect, name resolution included.
    pub connect_timeout: Duration,
    /// Largest response body [`read_body`] accepts.
    pub max_body: usize,
    pub user_agent: String,
    /// Connections open at once (awc's default is 100, which queued a busy
    /// discovery's seller calls behind each other until they timed out).
    pub max_connections: usize,
}

impl Default for OutboundOptions {
    fn default() -> Self {
        OutboundOptions {
            request_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            max_body: 8 * 1024 * 1024,
            user_agent: format!("agentic-api/{}", env!("CARGO_PKG_VERSION")),
            max_connections: 2048,
        }
    }
}

/// Why an outbound request failed, in terms a caller can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetError {
    /// The guard refused every address of the host.
    #[error("{0}")]
    Refused(Refused),
    #[error("timed out")]
    Timeout,
    #[error("response body larger than {limit} bytes")]
    TooLarge { limit: usize },
    /// The TLS handshake failed (certificate, protocol).
    #[error("TLS: {0}")]
    Tls(String),
    /// Connection or transfer failure.
    #[error("{0}")]
    Transport(String),
    /// The outbound worker is gone (the server is shutting down).
    #[error("outbound HTTP worker stopped")]
    Stopped,
}

impl From<SendRequestError> for NetError {
    fn from(e: SendRequestError) -> Self {
        match e {
            SendRequestError::Timeout => NetError::Timeout,
            SendRequestError::Connect(awc::error::ConnectError::Timeout) => NetError::Timeout,
            SendRequestError::Connect(awc::error::ConnectError::Resolver(inner)) => {
                match inner.downcast_ref::<Refused>() {
                    Some(r) => NetError::Refused(r.clone()),
                    None => NetError::Transport(format!("cannot resolve host: {inner}")),
                }
            }
            // rustls reports handshake failures as invalid data at connect.
            SendRequestError::Connect(awc::error::ConnectError::Io(e))
                if e.kind() == std::io::ErrorKind::InvalidData =>
            {
                NetError::Tls(e.to_string())
            }
            SendRequestError::Connect(awc::error::ConnectError::SslIsNotSupported) => {
                NetError::Tls("TLS is not supported".into())
            }
            other => NetError::Transport(other.to_string()),
        }
    }
}

impl NetError {
    /// A stable, short name of the failure, for logs and delivery records.
    pub fn class(&self) -> &'static str {
        match self {
            NetError::Refused(_) => "ssrf_blocked",
            NetError::Timeout => "timeout",
            NetError::TooLarge { .. } => "too_large",
            NetError::Tls(_) => "tls",
            NetError::Transport(_) => "connection",
            NetError::Stopped => "stopped",
        }
    }
}

/// Whether a failed request may have reached the peer: `false` only when
/// no connection was made (refused, unresolvable, blocked by the guard,
/// connect timeout), so nothing was sent. Callers that must never act twice
/// (a carrier submission) treat every other failure as an unknown outcome.
pub fn may_have_arrived(e: &SendRequestError) -> bool {
    !matches!(e, SendRequestError::Connect(_))
}

impl From<PayloadError> for NetError {
    fn from(e: PayloadError) -> Self {
        NetError::Transport(format!("reading the response: {e}"))
    }
}

/// An awc client whose every connection goes through the guard, with the
/// system resolver.
pub fn build_client(policy: UrlPolicy, options: &OutboundOptions) -> awc::Client {
    build_client_with(policy, options, SystemResolver)
}

/// [`build_client`] with another resolver (tests map names to addresses).
pub fn build_client_with(
    policy: UrlPolicy,
    options: &OutboundOptions,
    resolver: impl GuardedResolve + 'static,
) -> awc::Client {
    let connector = awc::Connector::new()
        .connector(guard::GuardedTcp::new(policy, resolver))
        .timeout(options.connect_timeout)
        .limit(options.max_connections)
        // Idle pooled connections are dropped before a typical server's own
        // keep-alive closes them, so a request rarely picks a dead one.
        .conn_keep_alive(Duration::from_secs(4));
    awc::Client::builder()
        .connector(connector)
        .disable_redirects()
        .timeout(options.request_timeout)
        .add_default_header((awc::http::header::USER_AGENT, options.user_agent.clone()))
        .finish()
}

/// Reads a whole response body, refusing more than `limit` bytes.
pub async fn read_body<S>(
    res: &mut awc::ClientResponse<S>,
    limit: usize,
) -> Result<bytes::Bytes, NetError>
where
    S: futures_util::Stream<Item = Result<bytes::Bytes, PayloadError>> + Unpin,
{
    let mut buf = bytes::BytesMut::new();
    while let Some(chunk) = res.next().await {
        let chunk = chunk?;
        if buf.len() + chunk.len() > limit {
            return Err(NetError::TooLarge { limit });
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf.freeze())
}

type Job = Box<dyn FnOnce(&awc::Client) -> LocalBoxFuture<'static, ()> + Send>;

/// One guarded awc client on its own thread, usable from any task. Cheap to
/// clone; the thread ends when the last clone is dropped.
#[derive(Clone)]
pub struct Outbound {
    jobs: tokio::sync::mpsc::UnboundedSender<Job>,
    options: std::sync::Arc<OutboundOptions>,
}

impl std::fmt::Debug for Outbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbound")
            .field("options", &self.options)
            .finish()
    }
}

impl Outbound {
    /// Starts the worker thread with the system resolver.
    pub fn start(policy: UrlPolicy, options: OutboundOptions) -> std::io::Result<Self> {
        Self::start_with(policy, options, || SystemResolver)
    }

    /// Starts the worker thread; `resolver` is called on it (resolvers need
    /// not be `Send`).
    pub fn start_with<R, F>(
        policy: UrlPolicy,
        options: OutboundOptions,
        resolver: F,
    ) -> std::io::Result<Self>
    where
        R: GuardedResolve + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        let (jobs, mut rx) = tokio::sync::mpsc::unbounded_channel::<Job>();
        let thread_options = options.clone();
        std::thread::Builder::new()
            .name("agentic-outbound".into())
            .spawn(move || {
                let rt = match actix_rt::Runtime::new() {
                    Ok(rt) => rt,
                    Err(e) => {
                        tracing::error!(error = %e, "outbound HTTP worker cannot start");
                        return;
                    }
                };
                rt.block_on(async move {
                    let client = build_client_with(policy, &thread_options, resolver());
                    while let Some(job) = rx.recv().await {
                        actix_rt::spawn(job(&client));
                    }
                });
            })?;
        Ok(Outbound {
            jobs,
            options: std::sync::Arc::new(options),
        })
    }

    pub fn options(&self) -> &OutboundOptions {
        &self.options
    }

    /// Runs `work` with the guarded client on the worker thread and returns
    /// its output. Dropping the returned future cancels `work`.
    pub fn run<T, F, Fut>(
        &self,
        work: F,
    ) -> impl Future<Output = Result<T, NetError>> + Send + use<T, F, Fut>
    where
        T: Send + 'static,
        F: FnOnce(awc::Client) -> Fut + Send + 'static,
        Fut: Future<Output = T> + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel::<T>();
        let job: Job = Box::new(move |client: &awc::Client| {
            let fut = work(client.clone());
            Box::pin(async move {
                let mut tx = tx;
                tokio::select! {
                    out = fut => { let _ = tx.send(out); }
                    // The caller went away: stop instead of finishing unseen work.
                    _ = tx.closed() => {}
                }
            })
        });
        let sent = self.jobs.send(job).is_ok();
        async move {
            if !sent {
                return Err(NetError::Stopped);
            }
            rx.await.map_err(|_| NetError::Stopped)
        }
    }
}
