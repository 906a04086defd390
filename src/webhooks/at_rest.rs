//! Which key webhook secrets are sealed with, decided once at start-up, and
//! the rows written without one sealed under it.
//!
//! - `AGENTIC_WEBHOOK_SECRET_KEY` set: that key, on any database.
//! - SQLite file, no key set: the key file beside the database
//!   (`<database file>.webhook-key`, 64 hex characters, mode 0600), made on
//!   the first start. Its content is a valid `AGENTIC_WEBHOOK_SECRET_KEY`,
//!   so a database moved elsewhere can take its key along.
//! - PostgreSQL, no key set: secrets stay in plain text (instances must
//!   share one key, which only the operator can give them), with a warning.
//! - In-memory SQLite: nothing is at rest; no key, nothing written.
//!
//! With a key, `plain1:` rows are sealed at start-up, each with a
//! compare-and-set in one transaction, so it is idempotent and two
//! instances starting together seal each row once. The same key seals
//! buyers' credentials for account sources and storefronts' callback
//! secrets ([`SEALED`]), and their plain rows are sealed the same way.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, Statement};

use super::secret::{self, SecretKey};

/// Appended to the database file's name to name the key file.
pub const KEY_FILE_SUFFIX: &str = ".webhook-key";

/// The key to seal webhook secrets with (see the module's notes), after
/// sealing every plain row under it.
pub async fn prepare(
    configured: Option<SecretKey>,
    db: &DatabaseConnection,
) -> anyhow::Result<Option<SecretKey>> {
    let key = match configured {
        Some(key) => Some(key),
        None => default_key(db).await?,
    };
    if let Some(key) = &key {
        seal_plain_rows(db, key).await?;
    }
    Ok(key)
}

async fn default_key(db: &DatabaseConnection) -> anyhow::Result<Option<SecretKey>> {
    match db.get_database_backend() {
        DbBackend::Sqlite => match sqlite_file(db).await? {
            Some(file) => load_or_create(&key_file_for(&file)).map(Some),
            None => Ok(None),
        },
        _ => {
            tracing::warn!(
                "AGENTIC_WEBHOOK_SECRET_KEY is not set: webhook signing secrets, buyers' \
                 source credentials and storefront callback secrets are stored in plain \
                 text in the database. Give every instance the same key \
                 (64 hex characters, e.g. from `openssl rand -hex 32`); existing secrets \
                 are encrypted at the next start"
            );
            Ok(None)
        }
    }
}

/// The key file of SQLite database file `db_file`.
pub fn key_file_for(db_file: &Path) -> PathBuf {
    let mut name = db_file.as_os_str().to_owned();
    name.push(KEY_FILE_SUFFIX);
    PathBuf::from(name)
}

/// The main database's file as SQLite itself names it (absolute); `None`
/// for an in-memory or temporary database.
async fn sqlite_file(db: &DatabaseConnection) -> anyhow::Result<Option<PathBuf>> {
    let row = db
        .query_one_raw(Statement::from_string(
            DbBackend::Sqlite,
            "SELECT file FROM pragma_database_list WHERE name = 'main'",
        ))
        .await
        .context("cannot read the SQLite database's file name")?;
    let file: Option<String> = match row {
        Some(row) => row.try_get_by_index(0)?,
        None => None,
    };
    Ok(file.filter(|f| !f.is_empty()).map(PathBuf::from))
}

/// Reads the key file, or makes it if there is none. Made under a
/// temporary name and linked into place, so a reader never sees half a
/// key and two processes starting together end up with the same one.
fn load_or_create(path: &Path) -> anyhow::Result<SecretKey> {
    if let Some(key) = load(path)? {
        return Ok(key);
    }
    let key: [u8; 32] = rand::random();
    let dir = path.parent().unwrap_or(Path::new("."));
    // Created with mode 0600 (tempfile's default on Unix).
    let mut tmp = tempfile::Builder::new()
        .prefix(".webhook-key-")
        .tempfile_in(dir)
        .with_context(|| format!("cannot write the webhook key file in {}", dir.display()))?;
    writeln!(tmp, "{}", hex::encode(key))?;
    tmp.as_file().sync_all()?;
    match tmp.persist_noclobber(path) {
        Ok(_) => {
            sync_dir(dir);
            tracing::info!(
                path = %path.display(),
                "made a webhook key file: webhook secrets are encrypted with it; back it up \
                 (without it they cannot be read)"
            );
            Ok(SecretKey::from_bytes(key))
        }
        // Another process made it first: use theirs.
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => {
            load(path)?.with_context(|| format!("the webhook key file {} vanished", path.display()))
        }
        Err(e) => Err(e.error)
            .with_context(|| format!("cannot create the webhook key file {}", path.display())),
    }
}

fn load(path: &Path) -> anyhow::Result<Option<SecretKey>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(e)
                .with_context(|| format!("cannot read the webhook key file {}", path.display()));
        }
    };
    warn_if_readable_by_others(path);
    SecretKey::from_hex(&text).map(Some).map_err(|_| {
        anyhow::anyhow!(
            "the webhook key file {} must hold exactly 64 hexadecimal characters (its content is not shown)",
            path.display()
        )
    })
}

#[cfg(unix)]
fn warn_if_readable_by_others(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(meta) = std::fs::metadata(path)
        && meta.permissions().mode() & 0o077 != 0
    {
        tracing::warn!(path = %path.display(), "the webhook key file is readable by others than its owner; `chmod 600` it");
    }
}

#[cfg(not(unix))]
fn warn_if_readable_by_others(_: &Path) {}

/// Makes the new file's name durable (a crash must not lose the key after
/// secrets were sealed with it). Best effort: not every platform can.
fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// A column of secrets sealed under the webhook key: its table, the row's
/// id column and how the id makes the associated data.
struct Sealed {
    table: &'static str,
    id: &'static str,
    aad: fn(&str) -> String,
}

/// Every column sealed with this key: webhook signing secrets, buyers'
/// credentials for account sources, storefronts' callback secrets.
const SEALED: [Sealed; 3] = [
    Sealed {
        table: "webhook_subscriptions",
        id: "id",
        aad: |id| id.to_string(),
    },
    Sealed {
        table: "source_credentials",
        id: "id",
        aad: |id| format!("source-credential:{id}"),
    },
    Sealed {
        table: "storefront_callback_secrets",
        id: "storefront_id",
        aad: |id| format!("storefront-callback:{id}"),
    },
];

/// Seals every `plain1:` secret under `key`. A row changed meanwhile (by
/// another instance doing the same) is left as it is.
async fn seal_plain_rows(db: &DatabaseConnection, key: &SecretKey) -> anyhow::Result<()> {
    let backend = db.get_database_backend();
    let txn = crate::db::begin_write(db).await?;
    let mut sealed = 0u64;
    for col in &SEALED {
        // The id read as text whatever its type, so one loop serves all.
        let select = format!(
            "SELECT CAST({id} AS TEXT) AS id, secret FROM {table} WHERE secret LIKE '{plain}%'",
            id = col.id,
            table = col.table,
            plain = secret::PLAIN,
        );
        let rows = txn
            .query_all_raw(Statement::from_string(backend, select))
            .await?;
        for row in rows {
            let id: String = row.try_get("", "id")?;
            let stored: String = row.try_get("", "secret")?;
            let aad = (col.aad)(&id);
            let clear = secret::open(&stored, &aad, None)
                .map_err(|e| anyhow::anyhow!("{} {id}: {e}", col.table))?;
            let value = secret::seal(&clear, &aad, Some(key))?;
            let (p1, p2, p3) = match backend {
                DbBackend::Postgres => ("$1", "$2", "$3"),
                _ => ("?", "?", "?"),
            };
            let update = format!(
                "UPDATE {table} SET secret = {p1} WHERE CAST({id} AS TEXT) = {p2} AND secret = {p3}",
                table = col.table,
                id = col.id,
            );
            sealed += txn
                .execute_raw(Statement::from_sql_and_values(
                    backend,
                    update,
                    [value.into(), id.into(), stored.into()],
                ))
                .await?
                .rows_affected();
        }
    }
    txn.commit().await?;
    if sealed > 0 {
        tracing::info!(
            count = sealed,
            "secrets stored in plain text (webhook, source credential, storefront callback) are now encrypted"
        );
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn the_key_file_is_made_once_owner_only_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = key_file_for(&dir.path().join("agentic.db"));
        assert_eq!(path, dir.path().join("agentic.db.webhook-key"));
        let made = load_or_create(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.len(), 65, "64 hex characters and a newline");
        assert_eq!(SecretKey::from_hex(&text).unwrap(), made);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_eq!(load_or_create(&path).unwrap(), made);
        // Nothing else was left in the directory.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn processes_starting_together_agree_on_one_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = key_file_for(&dir.path().join("agentic.db"));
        let keys: Vec<SecretKey> = std::thread::scope(|s| {
            let starts: Vec<_> = (0..8).map(|_| s.spawn(|| load_or_create(&path))).collect();
            starts
                .into_iter()
                .map(|h| h.join().unwrap().unwrap())
                .collect()
        });
        assert!(keys.iter().all(|k| *k == keys[0]));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_damaged_key_file_stops_the_start_without_showing_its_content() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.webhook-key");
        std::fs::write(&path, "SENTINEL-not-a-key").unwrap();
        let err = format!("{:#}", load_or_create(&path).unwrap_err());
        assert!(err.contains("64 hexadecimal"), "{err}");
        assert!(!err.contains("SENTINEL"), "{err}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "SENTINEL-not-a-key"
        );
    }

    #[tokio::test]
    async fn an_in_memory_database_gets_no_key_and_no_file() {
        let db = crate::db::connect("sqlite::memory:").await.unwrap();
        crate::db::migrate(&db).await.unwrap();
        assert_eq!(sqlite_file(&db).await.unwrap(), None);
        assert!(prepare(None, &db).await.unwrap().is_none());
        let strays: Vec<_> = std::fs::read_dir(".")
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(KEY_FILE_SUFFIX))
            .collect();
        assert!(strays.is_empty(), "{strays:?}");
    }
}
