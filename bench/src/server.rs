//! Builds the release binary, starts it on a fresh database on port 0, and
//! seeds through the operator CLI (the same code path operators use).

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use anyhow::{Context, bail};

pub struct Server {
    pub addr: SocketAddr,
    /// `host:port` of the Prometheus listener, as the server printed it.
    pub metrics: Option<String>,
    child: Child,
    bin: PathBuf,
    database_url: String,
    /// Extra environment, also given to `admin` (the same configuration).
    env: Vec<(String, String)>,
    _dir: Option<TempDir>,
}

/// A directory removed on drop.
pub struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn build_server() -> anyhow::Result<PathBuf> {
    // `BENCH_SERVER_BIN=/path/to/agentic-api` runs that binary instead (to
    // compare builds in one session); nothing is built.
    if let Some(bin) = std::env::var_os("BENCH_SERVER_BIN").filter(|b| !b.is_empty()) {
        return Ok(PathBuf::from(bin));
    }
    let root = workspace_root();
    let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    // `cargo run -p bench` gives the bench its own package's variables; a
    // build script (ring's) tracks CARGO_MANIFEST_DIR, so passing them on
    // would rebuild the server and everything linking ring each time it is
    // built from here rather than from a shell.
    for (key, _) in std::env::vars_os() {
        if let Some(k) = key.to_str()
            && (k.starts_with("CARGO_PKG_")
                || matches!(
                    k,
                    "CARGO_MANIFEST_DIR"
                        | "CARGO_MANIFEST_PATH"
                        | "CARGO_CRATE_NAME"
                        | "CARGO_BIN_NAME"
                        | "CARGO_PRIMARY_PACKAGE"
                ))
        {
            cargo.env_remove(k);
        }
    }
    let status = cargo
        .args([
            "build",
            "--release",
            "-p",
            "agentic-api",
            "--bin",
            "agentic-api",
        ])
        .current_dir(&root)
        .status()
        .context("running cargo build")?;
    if !status.success() {
        bail!("cargo build --release failed");
    }
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| root.join("target"));
    Ok(target.join("release").join("agentic-api"))
}

impl Server {
    pub async fn start(database_url: Option<&str>) -> anyhow::Result<Server> {
        Self::start_with(database_url, &[]).await
    }

    /// Like `start`, with extra environment for the server process.
    pub async fn start_with(
        database_url: Option<&str>,
        env: &[(&str, &str)],
    ) -> anyhow::Result<Server> {
        static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let bin = build_server()?;
        let (database_url, dir) = match database_url {
            Some(u) => (u.to_string(), None),
            None => {
                // One directory per server: a scenario may run several.
                let n = STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let dir =
                    std::env::temp_dir().join(format!("agentic-bench-{}-{n}", std::process::id()));
                std::fs::create_dir_all(&dir)?;
                let url = format!("sqlite://{}/bench.db?mode=rwc", dir.display());
                (url, Some(TempDir(dir)))
            }
        };
        // `BENCH_SERVER_WRAP="heaptrack -o /tmp/ht"` runs the server under a
        // profiler (RSS figures are then the wrapper's, not the server's).
        let wrap: Vec<String> = std::env::var("BENCH_SERVER_WRAP")
            .map(|w| w.split_whitespace().map(String::from).collect())
            .unwrap_or_default();
        let mut cmd = match wrap.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(&bin);
                c
            }
            None => Command::new(&bin),
        };
        let mut child = cmd
            .arg("serve")
            .env("AGENTIC_DATABASE_URL", &database_url)
            .env("AGENTIC_BIND", "127.0.0.1:0")
            .env("AGENTIC_METRICS_BIND", "127.0.0.1:0")
            .env("AGENTIC_RATE_LIMIT_PER_MINUTE", "1000000000")
            .env("AGENTIC_LOG", "warn")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting the server")?;
        let stdout = child.stdout.take().context("server stdout")?;
        let mut reader = BufReader::new(stdout);
        let mut metrics = None;
        let addr = loop {
            let mut line = String::new();
            if reader.read_line(&mut line)? == 0 {
                bail!("server exited before listening");
            }
            if let Some(i) = line.find("metrics on http://") {
                let rest = &line[i + "metrics on http://".len()..];
                metrics = rest.split('/').next().map(|h| h.trim().to_string());
            }
            if let Some(i) = line.find("listening on http://") {
                break line[i + "listening on http://".len()..].trim().parse()?;
            }
        };
        // Keep draining stdout so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in reader.lines() {});
        Ok(Server {
            addr,
            metrics,
            child,
            bin,
            database_url,
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            _dir: dir,
        })
    }

    /// Another instance on this server's database (PostgreSQL).
    pub async fn another(&self) -> anyhow::Result<Server> {
        let env: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        Server::start_with(Some(&self.database_url), &env).await
    }

    /// The integers of one row of `sql`, run on the server's database.
    pub async fn query_counts(&self, sql: &str) -> anyhow::Result<Vec<i64>> {
        use sea_orm::ConnectionTrait;
        let db = sea_orm::Database::connect(&self.database_url).await?;
        let backend = db.get_database_backend();
        let row = db
            .query_one_raw(sea_orm::Statement::from_string(backend, sql))
            .await?
            .context("no row")?;
        let mut out = Vec::new();
        for i in 0.. {
            match row.try_get_by_index::<i64>(i) {
                Ok(v) => out.push(v),
                Err(_) => break,
            }
        }
        db.close().await.ok();
        Ok(out)
    }

    /// The server's database, for seeding and checks outside its API.
    pub fn database_url(&self) -> &str {
        &self.database_url
    }

    pub fn backend(&self) -> &'static str {
        if self.database_url.starts_with("postgres") {
            "PostgreSQL"
        } else {
            "SQLite"
        }
    }

    pub fn admin(&self, args: &[&str]) -> anyhow::Result<serde_json::Value> {
        let out = Command::new(&self.bin)
            .arg("admin")
            .args(args)
            .env("AGENTIC_DATABASE_URL", &self.database_url)
            .env("AGENTIC_LOG", "warn")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .output()?;
        if !out.status.success() {
            bail!("admin {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(serde_json::from_slice(&out.stdout)?)
    }

    /// A new account, admin user and key; returns the key.
    pub fn seed_tenant(&self, permission: &str) -> anyhow::Result<String> {
        let acct = self.admin(&["create-account", "--name", "Bench"])?;
        let account = acct["accountId"].as_str().context("accountId")?.to_string();
        self.seed_user(
            &account,
            &format!("bench-{}@example.com", std::process::id()),
            permission,
        )
    }

    pub fn seed_user(
        &self,
        account: &str,
        email: &str,
        permission: &str,
    ) -> anyhow::Result<String> {
        let user = self.admin(&[
            "create-user",
            "--account",
            account,
            "--email",
            email,
            "--name",
            "Bench",
            "--role",
            "admin",
        ])?;
        let uid = user["userId"].to_string();
        let key = self.admin(&["create-api-key", "--user", &uid, "--permission", permission])?;
        Ok(key["apiKey"].as_str().context("apiKey")?.to_string())
    }

    /// CPU time (user + system) the server process has used, in seconds.
    pub fn cpu_seconds(&self) -> Option<f64> {
        cpu_seconds_of(&self.child.id().to_string())
    }

    /// Resident set size of the server process, from /proc.
    /// The server process's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    }
}

/// CPU time (user + system) of process `pid` (or `self`), in seconds, from
/// `/proc/{pid}/stat` (in clock ticks of 1/100 s on Linux).
pub fn cpu_seconds_of(pid: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces; fields count from after it.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// A fresh PostgreSQL database next to the one `url` names, dropped again
/// with this guard (through `psql`), so each server of a scenario starts
/// empty on a shared PostgreSQL.
pub struct FreshDatabase {
    pub url: String,
    admin_url: String,
    name: String,
}

impl FreshDatabase {
    pub fn create(url: &str, suffix: &str) -> anyhow::Result<FreshDatabase> {
        let (base, rest) = url
            .rsplit_once('/')
            .context("postgres URL without a database")?;
        let (db, query) = match rest.split_once('?') {
            Some((d, q)) => (d, format!("?{q}")),
            None => (rest, String::new()),
        };
        let name = format!("{db}_bench_{}_{suffix}", std::process::id());
        let fresh = FreshDatabase {
            url: format!("{base}/{name}{query}"),
            admin_url: url.to_string(),
            name,
        };
        fresh.psql(&format!("CREATE DATABASE \"{}\"", fresh.name))?;
        Ok(fresh)
    }

    fn psql(&self, sql: &str) -> anyhow::Result<()> {
        let out = Command::new("psql")
            .args([&self.admin_url, "-q", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .output()
            .context("running psql")?;
        if !out.status.success() {
            bail!("psql {sql}: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(())
    }
}

impl Drop for FreshDatabase {
    fn drop(&mut self) {
        let _ = self.psql(&format!(
            "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
            self.name
        ));
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}
