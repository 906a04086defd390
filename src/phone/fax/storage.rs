//! Private storage of received faxes and their replies: one directory per
//! account and customer under `AGENTIC_FAX_STORAGE_DIR` (mode 0700, files
//! 0600), files written whole (a temporary name, then renamed), and paths
//! kept relative so a record never names anything outside the root.

use std::path::{Component, Path, PathBuf};

#[derive(Debug, Clone)]
pub struct Storage {
    root: PathBuf,
}

fn safe(part: &str) -> std::io::Result<&str> {
    let ok = !part.is_empty()
        && part.len() <= 100
        && part
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        && part != "."
        && part != "..";
    if ok {
        Ok(part)
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "unsafe storage name",
        ))
    }
}

impl Storage {
    pub fn new(root: PathBuf) -> Self {
        Storage { root }
    }

    /// The absolute path of a stored file; refuses anything that could leave
    /// the root.
    fn resolve(&self, rel: &str) -> std::io::Result<PathBuf> {
        let path = Path::new(rel);
        if path
            .components()
            .any(|c| !matches!(c, Component::Normal(_)))
        {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "unsafe storage path",
            ));
        }
        Ok(self.root.join(path))
    }

    /// Stores `bytes` as `name` in the customer's directory; the relative
    /// path.
    pub async fn put(
        &self,
        account_id: &str,
        customer_id: i64,
        name: &str,
        bytes: &[u8],
    ) -> std::io::Result<String> {
        let rel = format!("{}/{customer_id}/{}", safe(account_id)?, safe(name)?);
        let path = self.resolve(&rel)?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let tmp = path.with_extension("part");
        let bytes = bytes.to_vec();
        tokio::task::spawn_blocking(move || -> std::io::Result<()> {
            use std::io::Write;
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder.create(&dir)?;
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create(true).truncate(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            let mut file = options.open(&tmp)?;
            file.write_all(&bytes)?;
            file.sync_all()?;
            std::fs::rename(&tmp, &path)
        })
        .await
        .map_err(std::io::Error::other)??;
        Ok(rel)
    }

    pub async fn read(&self, rel: &str) -> std::io::Result<Vec<u8>> {
        tokio::fs::read(self.resolve(rel)?).await
    }

    /// Deletes a stored file; one already gone is fine.
    pub async fn delete(&self, rel: &str) -> std::io::Result<()> {
        match tokio::fs::remove_file(self.resolve(rel)?).await {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_never_leave_the_root() {
        let s = Storage::new("/tmp/x".into());
        assert!(s.resolve("a/1/f.pdf").is_ok());
        for bad in ["../a", "/etc/passwd", "a/../../b", "./a"] {
            assert!(s.resolve(bad).is_err(), "{bad}");
        }
        assert!(safe("acct-1").is_ok());
        for bad in ["", "..", "a/b", "a b"] {
            assert!(safe(bad).is_err(), "{bad}");
        }
    }
}
