//! Real PDFs for tests, of this module and of the fax pipeline: documents of a
//! given length, one that is broken inside, one that is not a PDF at all and
//! one over a size bound. Deterministic, so failures reproduce.

use lopdf::{Document, Object, Stream, dictionary};

use super::render::{BODY_LINES_PER_PAGE, render_within};

/// The text of line `line` (from 1) of page `page` of an `of`-page document
/// made by [`pdf_with_pages`].
pub fn sample_line(page: u32, of: u32, line: usize) -> String {
    format!("Page {page} of {of}: line {line} of the sample fax, order 4711.")
}

/// A real `pages`-page PDF (at least one, any number): full pages of
/// [`sample_line`]s, each footed "Page n of N" as every rendered reply is.
pub fn pdf_with_pages(pages: u32) -> Vec<u8> {
    let pages = pages.max(1);
    let body: Vec<String> = (1..=pages)
        .flat_map(|page| (1..=BODY_LINES_PER_PAGE).map(move |line| sample_line(page, pages, line)))
        .collect();
    // Without a page cap, only a failed write into a Vec could fail, and a
    // Vec does not fail; an empty result would fail the test that used it.
    render_within("", &body.join("\n"), u32::MAX).unwrap_or_default()
}

/// A one-page PDF whose page content is a small compressed stream that
/// inflates to `inflated` bytes (blanks, then the word "inflated"): memory and
/// decompression limits.
pub fn pdf_inflating_to(inflated: usize) -> Vec<u8> {
    let text = b" BT /F1 12 Tf 72 700 Td (inflated) Tj ET";
    let mut content = vec![b' '; inflated.saturating_sub(text.len())];
    content.extend_from_slice(text);
    one_page_pdf(content)
}

/// A one-page PDF of `pairs` save/restore pairs (`q Q`, which draw nothing)
/// before the word "operations": a few kilobytes that a reader holds in memory
/// as millions of operations, for memory limits.
pub fn pdf_with_operations(pairs: usize) -> Vec<u8> {
    let mut content = b"q Q ".repeat(pairs);
    content.extend_from_slice(b"BT /F1 12 Tf 72 700 Td (operations) Tj ET");
    one_page_pdf(content)
}

/// `content` compressed as the content stream of a page.
fn one_page_pdf(content: Vec<u8>) -> Vec<u8> {
    let mut doc = Document::with_version("1.4");
    let pages_id = doc.new_object_id();
    let font_id = doc.add_object(dictionary! {
        "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica",
    });
    let mut stream = Stream::new(dictionary! {}, content);
    // Compression into memory cannot fail; uncompressed it is still a valid test file.
    let _ = stream.compress();
    let content_id = doc.add_object(stream);
    let page_id = doc.add_object(dictionary! {
        "Type" => "Page",
        "Parent" => pages_id,
        "Contents" => content_id,
        "Resources" => dictionary! { "Font" => dictionary! { "F1" => font_id } },
    });
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages",
            "Kids" => vec![page_id.into()],
            "Count" => 1,
            "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
        }),
    );
    let catalog_id = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog_id);
    let mut out = Vec::new();
    // Writing into a Vec does not fail.
    let _ = doc.save_to(&mut out);
    out
}

/// A valid header, then bytes no reader can make a document of.
pub fn malformed_pdf() -> Vec<u8> {
    let mut bytes = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n".to_vec();
    let mut x: u32 = 0x2545_5046;
    bytes.extend((0..4096).map(|_| {
        // xorshift: noise without the words a repair pass looks for
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        (x >> 24) as u8
    }));
    bytes
}

/// Something a sender might pass off as a fax: a PNG signature.
pub fn not_a_pdf() -> Vec<u8> {
    b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR this is an image, not a PDF".to_vec()
}

/// A readable PDF of `len` bytes (padding after its end marker, which readers
/// ignore), for size bounds: pass the bound plus one.
pub fn pdf_of_size(len: usize) -> Vec<u8> {
    let mut bytes = pdf_with_pages(1);
    if bytes.len() < len {
        bytes.push(b'%');
        bytes.resize(len, b' ');
    }
    bytes
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn pdf_with_pages_has_that_many_pages_past_the_reply_cap() {
        for n in [1, 7, 600] {
            let doc = lopdf::Document::load_mem(&pdf_with_pages(n)).unwrap();
            assert_eq!(doc.get_pages().len(), n as usize);
        }
    }

    #[test]
    fn the_fixtures_are_what_they_say() {
        use crate::phone::fax::pdf::{PdfError, validate, validate_within};
        assert_eq!(validate(&not_a_pdf()), Err(PdfError::NotPdf));
        assert_eq!(validate(&malformed_pdf()), Ok(()));
        assert!(lopdf::Document::load_mem(&malformed_pdf()).is_err());
        let big = pdf_of_size(10_000);
        assert_eq!(big.len(), 10_000);
        assert_eq!(
            validate_within(&big, 9_999),
            Err(PdfError::TooLarge { limit: 9_999 })
        );
        assert!(lopdf::Document::load_mem(&big).is_ok());
        let bomb = pdf_inflating_to(10 << 20);
        assert!(bomb.len() < 100_000, "{}", bomb.len());
        let doc = lopdf::Document::load_mem(&bomb).unwrap();
        assert_eq!(doc.extract_text(&[1]).unwrap().trim(), "inflated");
    }
}
