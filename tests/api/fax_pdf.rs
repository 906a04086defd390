//! Fax PDFs through the real extractor: the server's own binary as a child
//! process (`agentic-api internal extract-pdf`), with real rendered documents.

use std::path::Path;
use std::time::Duration;

use agentic_api::phone::fax::pdf::{self, ExtractLimits, PdfError, testing};

use crate::helpers::*;

/// The binary under test; inside this harness `current_exe()` is the harness.
fn program() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_agentic-api"))
}

/// Tests that look for leftover children must not see another test's.
static CHILDREN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Live (not yet reaped) extractor children of this process.
fn extractor_children() -> Vec<u32> {
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // pid (comm) state ppid ...
            let after_comm = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
            let ppid = after_comm.split_whitespace().nth(1);
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            ppid == Some(&me.to_string())
                && String::from_utf8_lossy(&cmdline).contains("extract-pdf")
        })
        .collect()
}

fn pages_of(text: &str) -> Vec<&str> {
    text.split('\u{c}').collect()
}

#[actix_web::test]
async fn a_ten_page_pdf_reads_back_page_by_page() {
    let _serial = CHILDREN.lock().await;
    let pdf = testing::pdf_with_pages(10);
    let got = pdf::extract(&pdf, &ExtractLimits::default(), program())
        .await
        .unwrap();
    assert_eq!(got.pages, 10);
    assert!(!got.truncated);
    let pages = pages_of(&got.text);
    assert_eq!(pages.len(), 10);
    for (i, page) in pages.iter().enumerate() {
        let n = u32::try_from(i + 1).unwrap();
        let lines: Vec<&str> = page.lines().collect();
        let (footer, body) = lines.split_last().unwrap();
        let expected: Vec<String> = (1..body.len() + 1)
            .map(|line| testing::sample_line(n, 10, line))
            .collect();
        assert!(body.len() >= 30, "a full page: {page}");
        assert_eq!(body, expected.as_slice());
        assert_eq!(*footer, format!("Page {n} of 10"));
    }
}

#[actix_web::test]
async fn a_rendered_reply_reads_back_as_written() {
    let _serial = CHILDREN.lock().await;
    let body = "Thank you for your order.\n\nWe ship on Monday – “express”, 12 € extra.\nΩ marks the spot.";
    let pdf = pdf::render_text("Re: order 4711", body).unwrap();
    let got = pdf::extract(&pdf, &ExtractLimits::default(), program())
        .await
        .unwrap();
    assert_eq!(
        got.text,
        "Re: order 4711\n\nThank you for your order.\n\nWe ship on Monday – “express”, 12 € extra.\n? marks the spot.\nPage 1 of 1"
    );
    assert_eq!((got.pages, got.truncated), (1, false));
}

#[actix_web::test]
async fn page_and_character_caps_truncate_and_say_so() {
    let _serial = CHILDREN.lock().await;
    let pdf = testing::pdf_with_pages(10);
    let limits = ExtractLimits {
        max_pages: 3,
        ..ExtractLimits::default()
    };
    let got = pdf::extract(&pdf, &limits, program()).await.unwrap();
    assert_eq!(got.pages, 10, "the document's length, not what was read");
    assert!(got.truncated);
    assert_eq!(pages_of(&got.text).len(), 3);
    assert!(got.text.ends_with("Page 3 of 10"));

    let limits = ExtractLimits {
        max_chars: 500,
        ..ExtractLimits::default()
    };
    let got = pdf::extract(&pdf, &limits, program()).await.unwrap();
    assert!(got.truncated);
    assert_eq!(got.text.chars().count(), 500);
    assert!(got.text.starts_with(&testing::sample_line(1, 10, 1)));

    let limits = ExtractLimits {
        max_document_pages: 9,
        ..ExtractLimits::default()
    };
    let got = pdf::extract(&pdf, &limits, program()).await;
    assert_eq!(got, Err(PdfError::TooManyPages { limit: 9 }));
}

#[actix_web::test]
async fn a_malformed_pdf_fails_cleanly() {
    let _serial = CHILDREN.lock().await;
    let got = pdf::extract(
        &testing::malformed_pdf(),
        &ExtractLimits::default(),
        program(),
    )
    .await;
    let err = got.unwrap_err();
    assert!(matches!(err, PdfError::Malformed(_)), "{err:?}");
    assert!(err.is_permanent());
    // A page that would inflate past the stream limit is refused, not inflated.
    let bomb = testing::pdf_inflating_to(pdf::STREAM_LIMIT + 1);
    let err = pdf::extract(&bomb, &ExtractLimits::default(), program())
        .await
        .unwrap_err();
    assert!(matches!(err, PdfError::Malformed(_)), "{err:?}");
}

#[actix_web::test]
async fn non_pdfs_and_oversized_files_are_refused_before_any_child_is_spawned() {
    // A program that cannot exist: spawning it would answer `Unavailable`.
    let nowhere = Path::new("/nonexistent/agentic-api");
    let limits = ExtractLimits {
        max_bytes: 64 * 1024,
        ..ExtractLimits::default()
    };
    let got = pdf::extract(&testing::not_a_pdf(), &limits, nowhere).await;
    assert_eq!(got, Err(PdfError::NotPdf));
    let got = pdf::extract(&testing::pdf_of_size(64 * 1024 + 1), &limits, nowhere).await;
    assert_eq!(got, Err(PdfError::TooLarge { limit: 64 * 1024 }));
    assert_eq!(pdf::validate(&testing::pdf_of_size(64 * 1024 + 1)), Ok(()));
}

#[actix_web::test]
async fn a_child_over_its_time_is_killed_and_reaped() {
    let _serial = CHILDREN.lock().await;
    // Seconds of parsing (then it would run out of memory), cut at 300 ms.
    let busy = testing::pdf_with_operations(1_000_000);
    let limits = ExtractLimits {
        timeout: Duration::from_millis(300),
        ..ExtractLimits::default()
    };
    let started = std::time::Instant::now();
    let probe = async {
        tokio::time::sleep(Duration::from_millis(150)).await;
        extractor_children()
    };
    let (got, running) = tokio::join!(pdf::extract(&busy, &limits, program()), probe);
    assert_eq!(running.len(), 1, "the probe sees the child while it runs");
    assert_eq!(got, Err(PdfError::Timeout));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(extractor_children(), Vec::<u32>::new());

    // Starting the binary alone takes longer than this.
    let limits = ExtractLimits {
        timeout: Duration::from_millis(1),
        ..ExtractLimits::default()
    };
    let got = pdf::extract(&testing::pdf_with_pages(2), &limits, program()).await;
    assert_eq!(got, Err(PdfError::Timeout));
    assert_eq!(extractor_children(), Vec::<u32>::new());
}

#[actix_web::test]
async fn a_child_over_its_memory_crashes_and_that_is_malformed() {
    let _serial = CHILDREN.lock().await;
    // A file of a few kilobytes that takes some 50 MiB to parse, and a budget of 8.
    let limits = ExtractLimits {
        memory_bytes: 8 * 1024 * 1024,
        ..ExtractLimits::default()
    };
    let heavy = testing::pdf_with_operations(100_000);
    let fine = pdf::extract(&heavy, &ExtractLimits::default(), program()).await;
    assert_eq!(fine.unwrap().text, "operations");
    let err = pdf::extract(&heavy, &limits, program()).await.unwrap_err();
    assert!(matches!(err, PdfError::Malformed(_)), "{err:?}");
    assert!(err.to_string().contains("signal"), "{err}");
    assert_eq!(extractor_children(), Vec::<u32>::new());
}

#[actix_web::test]
async fn the_test_harness_is_not_an_extractor() {
    let _serial = CHILDREN.lock().await;
    // Why tests pass the binary: here the current executable is the harness.
    let harness = pdf::default_program().unwrap();
    let err = pdf::extract(
        &testing::pdf_with_pages(1),
        &ExtractLimits::default(),
        &harness,
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), "unavailable", "{err:?}");
}

#[actix_web::test]
async fn the_server_keeps_serving_through_hostile_files() {
    let _serial = CHILDREN.lock().await;
    let app = spawn_app().await;
    let hostile = [
        (testing::malformed_pdf(), ExtractLimits::default()),
        (
            testing::pdf_with_operations(100_000),
            ExtractLimits {
                memory_bytes: 8 * 1024 * 1024,
                ..ExtractLimits::default()
            },
        ),
        (
            testing::pdf_with_pages(200),
            ExtractLimits {
                timeout: Duration::from_millis(1),
                ..ExtractLimits::default()
            },
        ),
    ];
    for (bytes, limits) in &hostile {
        assert!(pdf::extract(bytes, limits, program()).await.is_err());
    }
    let res = app.client.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    let good = pdf::extract(
        &testing::pdf_with_pages(2),
        &ExtractLimits::default(),
        program(),
    )
    .await
    .unwrap();
    assert_eq!(good.pages, 2);
}
