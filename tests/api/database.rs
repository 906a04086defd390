//! The database connections themselves.

use crate::helpers::*;

/// Every TCP socket this process holds to PostgreSQL has Nagle's algorithm
/// off. sqlx-core 0.9.0 stopped setting TCP_NODELAY, and then a statement
/// larger than the socket's send buffer waits ~40 ms for a delayed ACK
/// (`vendor/README.md`); this fails if a sqlx upgrade loses it again.
#[cfg(target_os = "linux")]
#[actix_web::test]
#[ignore = "needs PostgreSQL (AGENTIC_TEST_DATABASE_URL)"]
async fn every_connection_to_postgresql_has_nagle_off() {
    use std::os::fd::{BorrowedFd, RawFd};

    let url = std::env::var("AGENTIC_TEST_DATABASE_URL").unwrap_or_default();
    assert!(
        !url.is_empty(),
        "needs PostgreSQL: AGENTIC_TEST_DATABASE_URL and -- --include-ignored"
    );
    let port = url::Url::parse(&url).unwrap().port().unwrap_or(5432);
    let app = spawn_app().await;
    let t = app.tenant().await;
    assert_eq!(app.get("/api/v2/me", &t.key).await.status, 200);

    let mut connections = 0;
    for entry in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
        let Ok(fd) = entry.file_name().to_string_lossy().parse::<RawFd>() else {
            continue;
        };
        // SAFETY: borrowed for two getsockopt calls only. Another test may
        // close the descriptor meanwhile: the calls then fail (EBADF) and it
        // is skipped, or they read a socket that reused the number.
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        let socket = socket2::SockRef::from(&fd);
        let Some(peer) = socket.peer_addr().ok().and_then(|a| a.as_socket()) else {
            continue;
        };
        if peer.port() != port {
            continue;
        }
        if let Ok(nodelay) = socket.tcp_nodelay() {
            assert!(nodelay, "a connection to {peer} has Nagle's algorithm on");
            connections += 1;
        }
    }
    assert!(connections > 0, "no connection to PostgreSQL found");
}
