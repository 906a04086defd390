//! Fax PDFs: checking what arrives, extracting its text in an isolated child
//! process, and rendering a reply.
//!
//! Parsing a PDF from an unknown sender is the risky part: parsers can panic,
//! overflow their stack, loop or allocate without bound on hostile files. So the
//! server never parses one itself. [`extract`] runs the server's own binary as a
//! child (`agentic-api internal extract-pdf`), which limits its own memory and
//! CPU time before reading the file; the parent kills it at a wall-clock timeout
//! and treats any crash as [`PdfError::Malformed`]. [`validate`] and
//! [`render_text`] only look at bytes or write them, so they run in process.

mod child;
mod extract;
mod render;
pub mod testing;

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use child::{ExtractPdfArgs, STREAM_LIMIT, run_child};
pub use extract::extract;
pub use render::{PAGE_SIZE, render_text};

/// The largest PDF accepted by default (20 MiB): far above a 100-page fax.
pub const DEFAULT_MAX_BYTES: usize = 20 * 1024 * 1024;

/// Why a PDF was refused or could not be read. [`PdfError::code`] is stable and
/// short, for records and metrics; the messages are for logs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "code", content = "detail", rename_all = "snake_case")]
pub enum PdfError {
    /// Empty, or does not start with the `%PDF-` header.
    #[error("not a PDF (no %PDF- header)")]
    NotPdf,
    #[error("PDF larger than {limit} bytes")]
    TooLarge { limit: usize },
    /// Has a PDF header but could not be read: a parse error, or the extractor
    /// crashed or ran out of memory on it.
    #[error("malformed PDF: {0}")]
    Malformed(String),
    #[error("PDF has more than {limit} pages")]
    TooManyPages { limit: u32 },
    /// Needs a password to read.
    #[error("PDF is encrypted")]
    Encrypted,
    /// The extractor ran out of time (wall clock or CPU) and was killed.
    #[error("PDF extraction timed out")]
    Timeout,
    /// The extractor could not be started or answered nonsense: a fault of this
    /// server, not of the file.
    #[error("PDF extractor unavailable: {0}")]
    Unavailable(String),
    /// A document could not be written.
    #[serde(rename = "render_failed")]
    #[error("PDF rendering failed: {0}")]
    Render(String),
}

impl PdfError {
    pub fn code(&self) -> &'static str {
        match self {
            PdfError::NotPdf => "not_pdf",
            PdfError::TooLarge { .. } => "too_large",
            PdfError::Malformed(_) => "malformed",
            PdfError::TooManyPages { .. } => "too_many_pages",
            PdfError::Encrypted => "encrypted",
            PdfError::Timeout => "timeout",
            PdfError::Unavailable(_) => "unavailable",
            PdfError::Render(_) => "render_failed",
        }
    }

    /// Whether the file itself is at fault (refuse it; retrying cannot help),
    /// as opposed to this server (`Unavailable`, `Render`).
    pub fn is_permanent(&self) -> bool {
        !matches!(self, PdfError::Unavailable(_) | PdfError::Render(_))
    }
}

/// Bounds of one extraction. Pages past `max_pages` and characters past
/// `max_chars` are dropped and reported as `truncated`; a document over
/// `max_document_pages` or `max_bytes` is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractLimits {
    pub max_bytes: usize,
    /// Pages read, from the first.
    pub max_pages: u32,
    /// More pages than this and the document is refused (`TooManyPages`).
    pub max_document_pages: u32,
    /// Characters of text kept (Unicode scalar values).
    pub max_chars: usize,
    /// Wall-clock time of the child, from spawn to answer; its CPU time is capped
    /// at the same number of seconds, rounded up.
    pub timeout: Duration,
    /// Memory the child may add to what it had when it started (address space).
    pub memory_bytes: u64,
}

impl Default for ExtractLimits {
    fn default() -> Self {
        Self {
            max_bytes: DEFAULT_MAX_BYTES,
            max_pages: 50,
            max_document_pages: 1000,
            max_chars: 100_000,
            timeout: Duration::from_secs(20),
            memory_bytes: 512 * 1024 * 1024,
        }
    }
}

/// Text of a PDF: pages separated by a form feed (`\f`), lines by `\n`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Extracted {
    /// Pages in the document (not only those read).
    pub pages: u32,
    pub text: String,
    /// Some pages or characters were left out by the limits.
    pub truncated: bool,
}

/// Checks a PDF at the default size bound, [`DEFAULT_MAX_BYTES`].
pub fn validate(bytes: &[u8]) -> Result<(), PdfError> {
    validate_within(bytes, DEFAULT_MAX_BYTES)
}

/// Size bound and `%PDF-` header at offset 0. Nothing is parsed: a file that
/// passes may still be malformed, which only extraction finds out.
pub fn validate_within(bytes: &[u8], max_bytes: usize) -> Result<(), PdfError> {
    if bytes.len() > max_bytes {
        return Err(PdfError::TooLarge { limit: max_bytes });
    }
    // The header is `%PDF-1.7` or `%PDF-2.0`. Readers tolerate junk before it;
    // faxes come from carriers and fax software, which write it first.
    match bytes.get(..8) {
        Some([b'%', b'P', b'D', b'F', b'-', major, b'.', minor])
            if major.is_ascii_digit() && minor.is_ascii_digit() =>
        {
            Ok(())
        }
        _ => Err(PdfError::NotPdf),
    }
}

/// The program [`extract`] runs: this very binary. On Linux `/proc/self/exe`,
/// which still names the running binary after an upgrade replaced the file on
/// disk; elsewhere `std::env::current_exe()`.
///
/// Tests that run the server inside the test harness must pass
/// `env!("CARGO_BIN_EXE_agentic-api")` instead: there the current executable is
/// the harness, which has no `internal extract-pdf` subcommand.
pub fn default_program() -> std::io::Result<PathBuf> {
    let proc_self = PathBuf::from("/proc/self/exe");
    if cfg!(target_os = "linux") && proc_self.exists() {
        return Ok(proc_self);
    }
    std::env::current_exe()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn validate_accepts_a_pdf_header() {
        assert_eq!(validate(b"%PDF-1.7\n%%EOF\n"), Ok(()));
        assert_eq!(validate(b"%PDF-2.0"), Ok(()));
    }

    #[test]
    fn validate_refuses_what_is_not_a_pdf() {
        for bytes in [
            &b""[..],
            b"%PDF",
            b"%PDF-x.y\n",
            b"GIF89a........",
            b"  %PDF-1.4\n",
            b"<html>%PDF-1.4</html>",
        ] {
            assert_eq!(validate(bytes), Err(PdfError::NotPdf), "{bytes:?}");
        }
    }

    #[test]
    fn validate_checks_size_before_content() {
        let big = vec![b'x'; 11];
        assert_eq!(
            validate_within(&big, 10),
            Err(PdfError::TooLarge { limit: 10 })
        );
        let mut at_limit = b"%PDF-1.4\n".to_vec();
        at_limit.resize(10, b' ');
        assert_eq!(validate_within(&at_limit, 10), Ok(()));
    }

    #[test]
    fn error_codes_are_stable_and_round_trip_as_json() {
        let all = [
            (PdfError::NotPdf, "not_pdf"),
            (PdfError::TooLarge { limit: 5 }, "too_large"),
            (PdfError::Malformed("x".into()), "malformed"),
            (PdfError::TooManyPages { limit: 3 }, "too_many_pages"),
            (PdfError::Encrypted, "encrypted"),
            (PdfError::Timeout, "timeout"),
            (PdfError::Unavailable("x".into()), "unavailable"),
            (PdfError::Render("x".into()), "render_failed"),
        ];
        for (err, code) in all {
            assert_eq!(err.code(), code);
            let json = serde_json::to_value(&err).unwrap();
            assert_eq!(json["code"], code, "{json}");
            assert_eq!(serde_json::from_value::<PdfError>(json).unwrap(), err);
        }
    }
}
