//! Builds the release binary, starts it on a fresh database on port 0, and
//! seeds through the operator CLI (the same code path operators use).

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use anyhow::{Context, bail};

pub struct Server {
    pub addr: SocketAddr,
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
    let root = workspace_root();
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
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
            .env("AGENTIC_RATE_LIMIT_PER_MINUTE", "1000000000")
            .env("AGENTIC_LOG", "warn")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting the server")?;
        let stdout = child.stdout.take().context("server stdout")?;
        let mut reader = BufReader::new(stdout);
        let addr = loop {
            let mut line = String::new();
            if reader.read_line(&mut line)? == 0 {
                bail!("server exited before listening");
            }
            if let Some(i) = line.find("listening on http://") {
                break line[i + "listening on http://".len()..].trim().parse()?;
            }
        };
        // Keep draining stdout so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in reader.lines() {});
        Ok(Server {
            addr,
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

    /// Resident set size of the server process, from /proc.
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

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}
