//! The extractor's side: `agentic-api internal extract-pdf`, run by
//! [`super::extract`] with the PDF on stdin. It lowers its own resource limits
//! before reading a byte, extracts text page by page within the caps, and
//! writes one JSON object on stdout: `{pages, text, truncated}` or
//! `{error: {code, detail?}}`. Exit status 0 means "answered"; anything else
//! (a panic, a stack overflow, an allocation failure, a signal) is a crash.

use std::io::{Read, Write};

use lopdf::{Document, LoadOptions};

use super::{Extracted, PdfError, validate_within};

/// How far one stream may inflate (16 MiB). Far above any page of text; page
/// content that inflates past it is a bomb, not a fax. Public for tests.
pub const STREAM_LIMIT: usize = 16 * 1024 * 1024;

/// Limits of one run; [`super::extract`] passes them from its `ExtractLimits`.
#[derive(clap::Args, Debug, Clone, PartialEq, Eq)]
pub struct ExtractPdfArgs {
    #[arg(long)]
    pub max_bytes: usize,
    #[arg(long)]
    pub max_pages: u32,
    #[arg(long)]
    pub max_document_pages: u32,
    #[arg(long)]
    pub max_chars: usize,
    /// CPU seconds; SIGXCPU when used up, SIGKILL a second later.
    #[arg(long)]
    pub cpu_seconds: u64,
    /// Address space the process may add to what it has at start.
    #[arg(long)]
    pub memory_bytes: u64,
}

/// Runs the subcommand: answers on stdout; an error only if stdout is gone.
pub fn run_child(args: &ExtractPdfArgs) -> anyhow::Result<()> {
    let answer = match apply_limits(args) {
        Ok(()) => read_stdin(args.max_bytes).and_then(|bytes| extract_text(&bytes, args)),
        // Parsing without limits is what this process exists to avoid.
        Err(e) => Err(PdfError::Unavailable(format!(
            "could not set resource limits: {e}"
        ))),
    };
    let json = match answer {
        Ok(extracted) => serde_json::to_vec(&extracted)?,
        Err(error) => serde_json::to_vec(&serde_json::json!({ "error": error }))?,
    };
    let mut out = std::io::stdout().lock();
    out.write_all(&json)?;
    out.flush()?;
    Ok(())
}

fn apply_limits(args: &ExtractPdfArgs) -> std::io::Result<()> {
    use rlimit::Resource;
    // A crash dump of a hostile file helps no one and fills disks.
    lower(Resource::CORE, 0, 0)?;
    lower(
        Resource::CPU,
        args.cpu_seconds,
        args.cpu_seconds.saturating_add(1),
    )?;
    // The binary's mappings and the runtime are already in the address space;
    // the budget is on top of them.
    let cap = address_space_in_use()
        .unwrap_or(0)
        .saturating_add(args.memory_bytes);
    lower(Resource::AS, cap, cap)
}

/// Sets a limit no higher than the hard limit already in force (raising it
/// would need privileges, and lowering is the point).
fn lower(resource: rlimit::Resource, soft: u64, hard: u64) -> std::io::Result<()> {
    let (_, current_hard) = resource.get()?;
    let hard = hard.min(current_hard);
    resource.set(soft.min(hard), hard)
}

/// `VmSize` of this process in bytes (Linux); `None` elsewhere.
fn address_space_in_use() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmSize:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

fn read_stdin(max_bytes: usize) -> Result<Vec<u8>, PdfError> {
    let mut bytes = Vec::new();
    let cap = u64::try_from(max_bytes)
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    std::io::stdin()
        .lock()
        .take(cap)
        .read_to_end(&mut bytes)
        .map_err(|e| PdfError::Unavailable(format!("reading stdin: {e}")))?;
    Ok(bytes)
}

/// The extraction itself. Runs only in the child: it parses untrusted bytes.
pub(super) fn extract_text(bytes: &[u8], args: &ExtractPdfArgs) -> Result<Extracted, PdfError> {
    validate_within(bytes, args.max_bytes)?;
    let options = LoadOptions {
        max_decompressed_size: Some(STREAM_LIMIT),
        ..LoadOptions::default()
    };
    let doc = Document::load_mem_with_options(bytes, options).map_err(|e| match e {
        lopdf::Error::Decryption(_) => PdfError::Encrypted,
        e => PdfError::Malformed(e.to_string()),
    })?;
    // Loading succeeds without a usable password but leaves it encrypted.
    if doc.is_encrypted() && !doc.was_encrypted() {
        return Err(PdfError::Encrypted);
    }
    let page_numbers: Vec<u32> = doc.get_pages().into_keys().collect();
    let pages = u32::try_from(page_numbers.len()).unwrap_or(u32::MAX);
    if pages == 0 {
        return Err(PdfError::Malformed("no pages".into()));
    }
    if pages > args.max_document_pages {
        return Err(PdfError::TooManyPages {
            limit: args.max_document_pages,
        });
    }

    let mut text = String::new();
    let mut chars = 0usize;
    let mut truncated = pages > args.max_pages;
    let mut unreadable = None;
    let mut read = 0usize;
    for &number in page_numbers.iter().take(args.max_pages as usize) {
        read += 1;
        let mut page = String::new();
        let mut failed = None;
        for chunk in doc.extract_text_chunks_with_limit(&[number], STREAM_LIMIT) {
            match chunk {
                Ok(s) => page.push_str(&s),
                Err(e) => failed = Some(e),
            }
        }
        // A page with some unreadable text (an unknown font encoding, say)
        // still gives what it can; only a wholly unreadable document fails.
        if let (Some(e), true) = (failed, page.trim().is_empty()) {
            unreadable.get_or_insert_with(|| e.to_string());
        }
        let page = tidy(&page);
        if read > 1 {
            text.push('\u{c}');
            chars += 1;
        }
        let room = args.max_chars.saturating_sub(chars);
        let page_chars = page.chars().count();
        if page_chars > room {
            text.extend(page.chars().take(room));
            truncated = true;
            break;
        }
        text.push_str(&page);
        chars += page_chars;
    }
    if let Some(e) = unreadable
        && text.trim().is_empty()
    {
        return Err(PdfError::Malformed(e));
    }
    Ok(Extracted {
        pages,
        text,
        truncated,
    })
}

/// Page text for a reader that is a language model: no control characters
/// besides line breaks and tabs, no trailing blanks, no leading or trailing
/// empty lines.
fn tidy(page: &str) -> String {
    let lines: Vec<String> = page
        .lines()
        .map(|line| {
            line.chars()
                .filter(|&c| c == '\t' || !c.is_control())
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect();
    let first = lines.iter().position(|l| !l.is_empty());
    let last = lines.iter().rposition(|l| !l.is_empty());
    match (first, last) {
        (Some(first), Some(last)) => lines[first..=last].join("\n"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::phone::fax::pdf::render_text;
    use crate::phone::fax::pdf::testing;

    fn args() -> ExtractPdfArgs {
        ExtractPdfArgs {
            max_bytes: 1 << 20,
            max_pages: 100,
            max_document_pages: 1000,
            max_chars: 1_000_000,
            cpu_seconds: 10,
            memory_bytes: 1 << 30,
        }
    }

    #[test]
    fn extracts_rendered_text_page_by_page() {
        let pdf = testing::pdf_with_pages(3);
        let got = extract_text(&pdf, &args()).unwrap();
        assert_eq!(got.pages, 3);
        assert!(!got.truncated);
        let pages: Vec<&str> = got.text.split('\u{c}').collect();
        assert_eq!(pages.len(), 3);
        for (i, page) in pages.iter().enumerate() {
            let n = i + 1;
            assert!(
                page.starts_with(&format!("Page {n} of 3: line 1 ")),
                "{page}"
            );
            assert!(page.ends_with(&format!("Page {n} of 3")), "{page}");
        }
    }

    #[test]
    fn page_cap_truncates_and_says_so() {
        let pdf = testing::pdf_with_pages(5);
        let got = extract_text(
            &pdf,
            &ExtractPdfArgs {
                max_pages: 2,
                ..args()
            },
        )
        .unwrap();
        assert_eq!(got.pages, 5);
        assert!(got.truncated);
        assert_eq!(got.text.split('\u{c}').count(), 2);
        assert!(!got.text.contains("Page 3 of 5"));
    }

    #[test]
    fn character_cap_truncates_and_says_so() {
        let pdf = render_text("", "abcdefghij klmnopqrst").unwrap();
        let got = extract_text(
            &pdf,
            &ExtractPdfArgs {
                max_chars: 5,
                ..args()
            },
        )
        .unwrap();
        assert_eq!(got.text, "abcde");
        assert!(got.truncated);
    }

    #[test]
    fn too_many_pages_is_refused() {
        let pdf = testing::pdf_with_pages(4);
        let err = extract_text(
            &pdf,
            &ExtractPdfArgs {
                max_document_pages: 3,
                ..args()
            },
        );
        assert_eq!(err, Err(PdfError::TooManyPages { limit: 3 }));
    }

    #[test]
    fn a_decompression_bomb_stops_at_the_stream_limit() {
        let got = extract_text(&testing::pdf_inflating_to(STREAM_LIMIT / 2), &args()).unwrap();
        assert_eq!(got.text, "inflated");
        let err = extract_text(&testing::pdf_inflating_to(STREAM_LIMIT + 1), &args()).unwrap_err();
        assert_eq!(err.code(), "malformed", "{err}");
    }

    fn encrypted(user_password: &str) -> Vec<u8> {
        use lopdf::{EncryptionState, EncryptionVersion, Permissions};
        let mut doc = Document::load_mem(&render_text("", "Private fax").unwrap()).unwrap();
        let id = lopdf::Object::string_literal("0123456789abcdef");
        doc.trailer.set("ID", vec![id.clone(), id]);
        let state = EncryptionState::try_from(EncryptionVersion::V2 {
            document: &doc,
            owner_password: "owner",
            user_password,
            key_length: 128,
            permissions: Permissions::all(),
        })
        .unwrap();
        doc.encrypt(&state).unwrap();
        let mut out = Vec::new();
        doc.save_to(&mut out).unwrap();
        out
    }

    #[test]
    fn a_password_protected_pdf_is_encrypted_and_an_open_one_reads() {
        assert_eq!(
            extract_text(&encrypted("secret"), &args()),
            Err(PdfError::Encrypted)
        );
        let got = extract_text(&encrypted(""), &args()).unwrap();
        assert_eq!(got.text, "Private fax\nPage 1 of 1");
    }

    #[test]
    fn garbage_after_a_header_is_malformed() {
        let err = extract_text(&testing::malformed_pdf(), &args()).unwrap_err();
        assert_eq!(err.code(), "malformed", "{err}");
    }

    #[test]
    fn paragraphs_and_replacements_survive_a_round_trip() {
        let pdf = render_text("Réponse", "Dear Zoë,\n\nthanks – “ok”.\nŁódź 你").unwrap();
        let got = extract_text(&pdf, &args()).unwrap();
        assert_eq!(
            got.text,
            "Réponse\n\nDear Zoë,\n\nthanks – “ok”.\nLódz ?\nPage 1 of 1"
        );
    }

    #[test]
    fn tidy_drops_control_characters_and_blank_edges() {
        assert_eq!(tidy("\n  \nA\u{0}b  \n\n c\t\u{1b}\n \n"), "Ab\n\n c");
    }
}
