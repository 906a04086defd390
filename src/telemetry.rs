//! Structured logs on stderr (stdout is reserved for the operator contract's
//! output: JSON from `admin`, the `listening on` line, the demo key).

use tracing_subscriber::EnvFilter;

pub fn init(filter: &str) {
    // Migration chatter is noise on the admin CLI; keep it at warn unless asked.
    let spec = if filter.contains("sea_orm_migration") {
        filter.to_string()
    } else {
        format!("{filter},sea_orm_migration=warn")
    };
    let filter = EnvFilter::try_new(spec).unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}
