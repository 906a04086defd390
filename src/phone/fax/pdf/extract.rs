//! The server's side of extraction: run the extractor child, feed it, bound it.

use std::path::Path;
use std::process::{ExitStatus, Stdio};

use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use super::{ExtractLimits, Extracted, PdfError, validate_within};

/// Bytes of the child's stderr kept for the error detail (its end, where a
/// panic message is).
const STDERR_KEPT: usize = 4096;

/// Extracts the text of `bytes` in a child process of `program` (the server's
/// own binary, see [`super::default_program`]), within `limits`.
///
/// Size and header are checked first, so a non-PDF never reaches a child. The
/// child limits its own address space and CPU time; it is killed when
/// `limits.timeout` passes ([`PdfError::Timeout`]), or when this future is
/// dropped. A crash of the child (panic, stack overflow, allocation failure,
/// signal) is [`PdfError::Malformed`]: the file made the parser fail. If the
/// child cannot be started or answers nonsense, [`PdfError::Unavailable`].
///
/// Each call is one process of up to `limits.memory_bytes`: callers that take
/// many faxes at once should bound how many run together.
pub async fn extract(
    bytes: &[u8],
    limits: &ExtractLimits,
    program: &Path,
) -> Result<Extracted, PdfError> {
    validate_within(bytes, limits.max_bytes)?;
    let cpu_seconds = limits
        .timeout
        .as_secs()
        .saturating_add(u64::from(limits.timeout.subsec_nanos() > 0))
        .max(1);
    let mut child = Command::new(program)
        .args(["internal", "extract-pdf"])
        .arg(format!("--max-bytes={}", limits.max_bytes))
        .arg(format!("--max-pages={}", limits.max_pages))
        .arg(format!(
            "--max-document-pages={}",
            limits.max_document_pages
        ))
        .arg(format!("--max-chars={}", limits.max_chars))
        .arg(format!("--cpu-seconds={cpu_seconds}"))
        .arg(format!("--memory-bytes={}", limits.memory_bytes))
        // Nothing of the server's environment (secrets, database URL) is its business.
        .env_clear()
        // mimalloc otherwise reserves a 1 GiB arena at start, and allocations
        // inside it are beyond the reach of the address-space limit.
        .env("MIMALLOC_ARENA_RESERVE", "0")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| PdfError::Unavailable(format!("cannot start {}: {e}", program.display())))?;
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(PdfError::Unavailable("extractor pipes missing".into()));
    };
    // The answer holds at most `max_chars` characters, escaped in JSON.
    let answer_cap = limits.max_chars.saturating_mul(6).saturating_add(64 * 1024);

    let run = async {
        let feed = async move {
            // A child that refuses the file stops reading; its answer says why.
            let _ = stdin.write_all(bytes).await;
            drop(stdin);
        };
        let (_, out, err) = tokio::join!(
            feed,
            read_capped(stdout, answer_cap, false),
            read_capped(stderr, STDERR_KEPT, true),
        );
        (out, err, child.wait().await)
    };
    let outcome = tokio::time::timeout(limits.timeout, run).await;
    let Ok((out, err, status)) = outcome else {
        // SIGKILL, then reap; an error here means it is already gone.
        let _ = child.kill().await;
        return Err(PdfError::Timeout);
    };
    let status =
        status.map_err(|e| PdfError::Unavailable(format!("waiting for extractor: {e}")))?;
    let stderr = err.map(|(bytes, _)| bytes).unwrap_or_default();
    if !status.success() {
        return Err(crashed(status, &stderr));
    }
    let (out, overflowed) =
        out.map_err(|e| PdfError::Unavailable(format!("reading extractor answer: {e}")))?;
    if overflowed {
        return Err(PdfError::Unavailable(format!(
            "extractor answer over {answer_cap} bytes"
        )));
    }
    match serde_json::from_slice::<Answer>(&out) {
        Ok(Answer::Done(extracted)) => Ok(extracted),
        Ok(Answer::Failed { error }) => Err(error),
        Err(e) => Err(PdfError::Unavailable(format!(
            "unreadable extractor answer: {e}"
        ))),
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Answer {
    Failed { error: PdfError },
    Done(Extracted),
}

/// What a non-zero exit means. A signal or a panic came from parsing the file;
/// anything else (say, a binary without the subcommand) is the server's fault.
fn crashed(status: ExitStatus, stderr: &[u8]) -> PdfError {
    #[cfg(unix)]
    let signal = std::os::unix::process::ExitStatusExt::signal(&status);
    #[cfg(not(unix))]
    let signal = None;
    let stderr = String::from_utf8_lossy(stderr);
    let last_line = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .chars()
        .take(300)
        .collect::<String>();
    const SIGXCPU: i32 = 24;
    match signal {
        Some(SIGXCPU) => PdfError::Timeout,
        Some(signal) => {
            PdfError::Malformed(format!("extractor killed by signal {signal}: {last_line}"))
        }
        None if status.code() == Some(101) && stderr.contains("panicked") => {
            PdfError::Malformed(format!("extractor panicked: {last_line}"))
        }
        None => PdfError::Unavailable(format!("extractor {status}: {last_line}")),
    }
}

/// Reads to the end, keeping at most `cap` bytes: the first ones (`overflowed`
/// says some were dropped), or with `tail` the last ones. Always drains, so
/// the child never blocks on a full pipe.
async fn read_capped(
    mut reader: impl AsyncRead + Unpin,
    cap: usize,
    tail: bool,
) -> std::io::Result<(Vec<u8>, bool)> {
    let mut kept = Vec::new();
    let mut overflowed = false;
    let mut buf = vec![0u8; 8192];
    loop {
        let n = reader.read(&mut buf).await?;
        if n == 0 {
            return Ok((kept, overflowed));
        }
        kept.extend_from_slice(&buf[..n]);
        if kept.len() > cap {
            overflowed = true;
            if tail {
                kept.drain(..kept.len() - cap);
            } else {
                kept.truncate(cap);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn a_non_pdf_is_refused_before_anything_is_spawned() {
        let nowhere = Path::new("/nonexistent/agentic-api");
        let limits = ExtractLimits::default();
        let got = extract(&super::super::testing::not_a_pdf(), &limits, nowhere).await;
        assert_eq!(got, Err(PdfError::NotPdf));
        let big = super::super::testing::pdf_of_size(limits.max_bytes + 1);
        let got = extract(&big, &limits, nowhere).await;
        assert_eq!(
            got,
            Err(PdfError::TooLarge {
                limit: limits.max_bytes
            })
        );
    }

    #[tokio::test]
    async fn a_missing_program_is_unavailable_not_the_files_fault() {
        let nowhere = Path::new("/nonexistent/agentic-api");
        let pdf = super::super::testing::pdf_with_pages(1);
        let err = extract(&pdf, &ExtractLimits::default(), nowhere)
            .await
            .unwrap_err();
        assert_eq!(err.code(), "unavailable", "{err}");
        assert!(!err.is_permanent());
    }

    #[tokio::test]
    async fn read_capped_keeps_the_head_or_the_tail() {
        let data: Vec<u8> = (0..=255).cycle().take(20_000).collect();
        let (head, over) = read_capped(&data[..], 100, false).await.unwrap();
        assert_eq!((head.as_slice(), over), (&data[..100], true));
        let (tail, over) = read_capped(&data[..], 100, true).await.unwrap();
        assert_eq!((tail.as_slice(), over), (&data[data.len() - 100..], true));
        let (all, over) = read_capped(&data[..50], 100, false).await.unwrap();
        assert_eq!((all.as_slice(), over), (&data[..50], false));
    }

    #[cfg(unix)]
    #[test]
    fn exit_statuses_map_to_errors() {
        use std::os::unix::process::ExitStatusExt;
        let signalled = |sig: i32| ExitStatus::from_raw(sig);
        let exited = |code: i32| ExitStatus::from_raw(code << 8);
        assert_eq!(crashed(signalled(24), b""), PdfError::Timeout);
        assert_eq!(
            crashed(signalled(6), b"x\nmemory allocation failed\n").code(),
            "malformed"
        );
        assert_eq!(
            crashed(exited(101), b"thread 'main' panicked at x.rs").code(),
            "malformed"
        );
        assert_eq!(
            crashed(exited(2), b"error: unrecognized subcommand").code(),
            "unavailable"
        );
    }
}
