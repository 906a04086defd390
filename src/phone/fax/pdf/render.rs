//! Replies as PDFs: US Letter pages, Helvetica (one of the standard 14 fonts,
//! which every reader has, so no font file is embedded) in WinAnsiEncoding, text
//! wrapped to the page width and paginated, with "Page n of N" at the foot.

use lopdf::content::{Content, Operation};
use lopdf::xref::XrefType;
use lopdf::{Document, Object, Stream, StringFormat, dictionary};

use super::PdfError;

/// Width and height in points: US Letter (8.5 x 11 in), the North American fax
/// size. A4 receivers print it scaled to fit.
pub const PAGE_SIZE: (f32, f32) = (612.0, 792.0);

/// One inch: inside what fax machines can print.
const MARGIN: f32 = 72.0;
const TEXT_WIDTH: f32 = PAGE_SIZE.0 - 2.0 * MARGIN;
/// 12 pt stays legible at the standard fax resolution (98 lines per inch).
const BODY: Style = Style {
    size: 12.0,
    leading: 16.0,
};
const TITLE: Style = Style {
    size: 16.0,
    leading: 22.0,
};
const FOOTER_SIZE: f32 = 9.0;
/// Lines of body text on a page without a title.
pub(super) const BODY_LINES_PER_PAGE: usize =
    ((PAGE_SIZE.1 - 2.0 * MARGIN) / BODY.leading) as usize;
/// A reply is a letter, not a book: anything longer is a fault upstream.
const MAX_RENDER_PAGES: u32 = 500;

#[derive(Clone, Copy, PartialEq)]
struct Style {
    size: f32,
    leading: f32,
}

struct Line {
    text: String,
    style: Style,
}

/// A PDF of `title` (larger, first page) and `body`, wrapped and paginated.
/// Characters Helvetica's WinAnsiEncoding cannot show are replaced, see
/// [`normalize`]; the text reads back through `extract` as written, apart from
/// those replacements, wrapping and the page footers.
pub fn render_text(title: &str, body: &str) -> Result<Vec<u8>, PdfError> {
    render_within(title, body, MAX_RENDER_PAGES)
}

/// [`render_text`] with another page cap (test documents may be longer).
pub(super) fn render_within(title: &str, body: &str, max_pages: u32) -> Result<Vec<u8>, PdfError> {
    let mut lines = Vec::new();
    let shown_title = normalize(title);
    if !shown_title.trim().is_empty() {
        for para in shown_title.split('\n') {
            lines.extend(
                wrap(para, TITLE)
                    .into_iter()
                    .map(|text| Line { text, style: TITLE }),
            );
        }
        lines.push(Line {
            text: String::new(),
            style: BODY,
        });
    }
    for para in normalize(body).split('\n') {
        lines.extend(
            wrap(para, BODY)
                .into_iter()
                .map(|text| Line { text, style: BODY }),
        );
    }
    let pages = paginate(lines);
    let total = u32::try_from(pages.len()).unwrap_or(u32::MAX);
    if total > max_pages {
        return Err(PdfError::TooManyPages { limit: max_pages });
    }
    write_document(title.trim(), &pages, total).map_err(|e| PdfError::Render(e.to_string()))
}

fn paginate(lines: Vec<Line>) -> Vec<Vec<Line>> {
    let mut pages = vec![Vec::new()];
    let mut used = 0.0;
    for line in lines {
        if used + line.style.leading > PAGE_SIZE.1 - 2.0 * MARGIN {
            pages.push(Vec::new());
            used = 0.0;
            // A blank line at the top of a page is only a gap.
            if line.text.is_empty() {
                continue;
            }
        }
        used += line.style.leading;
        if let Some(page) = pages.last_mut() {
            page.push(line);
        }
    }
    pages
}

fn write_document(title: &str, pages: &[Vec<Line>], total: u32) -> lopdf::Result<Vec<u8>> {
    let mut doc = Document::with_version("1.4");
    let pages_id = doc.new_object_id();
    let font_id = doc.add_object(dictionary! {
        "Type" => "Font",
        "Subtype" => "Type1",
        "BaseFont" => "Helvetica",
        "Encoding" => "WinAnsiEncoding",
    });
    let resources_id = doc.add_object(dictionary! {
        "Font" => dictionary! { "F1" => font_id },
    });
    let mut kids = Vec::with_capacity(pages.len());
    for (index, lines) in pages.iter().enumerate() {
        let content = Content {
            operations: page_operations(lines, index + 1, total),
        };
        let content_id = doc.add_object(Stream::new(dictionary! {}, content.encode()?));
        let page_id = doc.add_object(dictionary! {
            "Type" => "Page",
            "Parent" => pages_id,
            "Contents" => content_id,
        });
        kids.push(Object::from(page_id));
    }
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages",
            "Kids" => kids,
            "Count" => i64::from(total),
            "Resources" => resources_id,
            "MediaBox" => vec![0.into(), 0.into(), PAGE_SIZE.0.into(), PAGE_SIZE.1.into()],
        }),
    );
    let catalog_id = doc.add_object(dictionary! {
        "Type" => "Catalog",
        "Pages" => pages_id,
    });
    doc.trailer.set("Root", catalog_id);
    if !title.is_empty() {
        let info_id = doc.add_object(dictionary! { "Title" => lopdf::text_string(title) });
        doc.trailer.set("Info", info_id);
    }
    // A classic cross-reference table (PDF 1.4), which every fax converter reads.
    doc.reference_table.cross_reference_type = XrefType::CrossReferenceTable;
    doc.compress();
    let mut out = Vec::new();
    doc.save_to(&mut out)?;
    Ok(out)
}

/// One text object per page: lines advance with `T*`, which readers (and
/// `extract`) take as a line break. Blank lines show a single space so that
/// paragraph breaks survive extraction.
fn page_operations(lines: &[Line], page: usize, total: u32) -> Vec<Operation> {
    let mut ops = vec![Operation::new("BT", vec![])];
    let mut style = None;
    for (i, line) in lines.iter().enumerate() {
        if style != Some(line.style) {
            ops.push(Operation::new(
                "Tf",
                vec!["F1".into(), line.style.size.into()],
            ));
            ops.push(Operation::new("TL", vec![line.style.leading.into()]));
            if style.is_none() {
                let top = PAGE_SIZE.1 - MARGIN - line.style.size;
                ops.push(Operation::new("Td", vec![MARGIN.into(), top.into()]));
            }
            style = Some(line.style);
        }
        if i > 0 {
            ops.push(Operation::new("T*", vec![]));
        }
        let text = if line.text.is_empty() {
            " "
        } else {
            &line.text
        };
        ops.push(Operation::new("Tj", vec![encode(text)]));
    }
    ops.push(Operation::new("ET", vec![]));
    ops.extend([
        Operation::new("BT", vec![]),
        Operation::new("Tf", vec!["F1".into(), FOOTER_SIZE.into()]),
        Operation::new("Td", vec![MARGIN.into(), (MARGIN / 2.0).into()]),
        Operation::new("Tj", vec![encode(&format!("Page {page} of {total}"))]),
        Operation::new("ET", vec![]),
    ]);
    ops
}

fn encode(text: &str) -> Object {
    let bytes = text.chars().filter_map(win_ansi).collect();
    Object::String(bytes, StringFormat::Literal)
}

/// Greedy word wrap at [`TEXT_WIDTH`] with Helvetica's advance widths. Runs of
/// spaces inside a line are kept (indentation, alignment); a word wider than a
/// line is broken between characters.
fn wrap(para: &str, style: Style) -> Vec<String> {
    let max = TEXT_WIDTH * 1000.0 / style.size;
    let mut lines = Vec::new();
    let mut line = String::new();
    let mut width = 0.0_f32;
    for piece in pieces(para) {
        let piece_width: f32 = piece.chars().map(char_width).sum();
        if piece.starts_with(' ') {
            // Spaces at a break are dropped: they would only push the next line right.
            if !line.is_empty() || lines.is_empty() {
                line.push_str(piece);
                width += piece_width;
            }
            continue;
        }
        if width + piece_width <= max {
            line.push_str(piece);
            width += piece_width;
            continue;
        }
        if !line.trim().is_empty() {
            lines.push(std::mem::take(&mut line).trim_end().to_string());
            width = 0.0;
        }
        for c in piece.chars() {
            let w = char_width(c);
            if width + w > max && !line.trim().is_empty() {
                lines.push(std::mem::take(&mut line));
                width = 0.0;
            }
            line.push(c);
            width += w;
        }
    }
    lines.push(line.trim_end().to_string());
    lines
}

/// Alternating runs of spaces and of other characters.
fn pieces(s: &str) -> impl Iterator<Item = &str> {
    let mut rest = s;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let is_space = first == ' ';
        let end = rest
            .find(|c: char| (c == ' ') != is_space)
            .unwrap_or(rest.len());
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        Some(piece)
    })
}

fn char_width(c: char) -> f32 {
    win_ansi(c)
        .and_then(|b| b.checked_sub(0x20))
        .and_then(|i| HELVETICA_WIDTHS.get(usize::from(i)))
        .map_or(0.0, |w| f32::from(*w))
}

/// Text as Helvetica in WinAnsiEncoding can show it, lines split by `\n`:
/// - line ends (`\r\n`, `\r`) become `\n`, a tab four spaces;
/// - other control characters, zero-width characters, combining marks (so a
///   decomposed `e` + acute shows as `e`) and soft hyphens are dropped;
/// - Latin-1 and the typographic characters of Windows-1252 (curly quotes,
///   dashes, ellipsis, bullet, euro, trademark...) are kept as they are;
/// - the accented letters of Latin Extended-A (Polish, Czech, Turkish,
///   Hungarian...) lose their accent: `ł` becomes `l`, `ő` becomes `o`;
/// - unusual spaces become a space, hyphen and minus variants `-`, primes
///   quotes, ligatures their letters;
/// - anything else (Greek, Cyrillic, CJK, emoji...) becomes `?`.
pub(super) fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                out.push('\n');
            }
            '\n' => out.push('\n'),
            '\t' => out.push_str("    "),
            _ if win_ansi(c).is_some() => out.push(c),
            _ => out.push_str(substitute(c)),
        }
    }
    out
}

fn substitute(c: char) -> &'static str {
    const LATIN_EXTENDED_A: &str = "AaAaAaCcCcCcCcDdDdEeEeEeEeEeGgGgGgGgHhHhIiIiIiIiIiIiJjKkkLlLlLlLlLlNnNnNnnNnOoOoOoOoRrRrRrSsSsSsSsTtTtTtUuUuUuUuUuUuWwYyYZzZzZzs";
    match c {
        '\u{100}'..='\u{17f}' => {
            let i = c as usize - 0x100;
            LATIN_EXTENDED_A.get(i..=i).unwrap_or("?")
        }
        '\u{2000}'..='\u{200a}' | '\u{202f}' | '\u{205f}' | '\u{3000}' => " ",
        '\u{2010}' | '\u{2011}' | '\u{2212}' => "-",
        '\u{2012}' => "\u{2013}",
        '\u{2015}' => "\u{2014}",
        '\u{2032}' => "'",
        '\u{2033}' => "\"",
        '\u{2044}' | '\u{2215}' => "/",
        '\u{fb00}' => "ff",
        '\u{fb01}' => "fi",
        '\u{fb02}' => "fl",
        '\u{fb03}' => "ffi",
        '\u{fb04}' => "ffl",
        '\u{ad}'
        | '\u{200b}'..='\u{200f}'
        | '\u{2028}'..='\u{202e}'
        | '\u{2060}'..='\u{206f}'
        | '\u{feff}'
        | '\u{300}'..='\u{36f}' => "",
        _ if c.is_control() => "",
        _ => "?",
    }
}

/// The WinAnsiEncoding byte of a character, if it has one (soft hyphen and
/// the C1 controls are left out: they show nothing).
fn win_ansi(c: char) -> Option<u8> {
    let byte = match c {
        ' '..='~' | '\u{a0}'..='\u{ac}' | '\u{ae}'..='\u{ff}' => return u8::try_from(c).ok(),
        '\u{20ac}' => 0x80,
        '\u{201a}' => 0x82,
        '\u{192}' => 0x83,
        '\u{201e}' => 0x84,
        '\u{2026}' => 0x85,
        '\u{2020}' => 0x86,
        '\u{2021}' => 0x87,
        '\u{2c6}' => 0x88,
        '\u{2030}' => 0x89,
        '\u{160}' => 0x8a,
        '\u{2039}' => 0x8b,
        '\u{152}' => 0x8c,
        '\u{17d}' => 0x8e,
        '\u{2018}' => 0x91,
        '\u{2019}' => 0x92,
        '\u{201c}' => 0x93,
        '\u{201d}' => 0x94,
        '\u{2022}' => 0x95,
        '\u{2013}' => 0x96,
        '\u{2014}' => 0x97,
        '\u{2dc}' => 0x98,
        '\u{2122}' => 0x99,
        '\u{161}' => 0x9a,
        '\u{203a}' => 0x9b,
        '\u{153}' => 0x9c,
        '\u{17e}' => 0x9e,
        '\u{178}' => 0x9f,
        _ => return None,
    };
    Some(byte)
}

/// Advance widths of Helvetica (Adobe's font metrics, 1/1000 em) for the
/// WinAnsiEncoding bytes 0x20 to 0xFF; 0 where the encoding has no character.
#[rustfmt::skip]
const HELVETICA_WIDTHS: [u16; 224] = [
    278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, // 0x20
    556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556, // 0x30
    1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778, // 0x40
    667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556, // 0x50
    333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556, // 0x60
    556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584, 0,   // 0x70
    556, 0, 222, 556, 333, 1000, 556, 556, 333, 1000, 667, 333, 1000, 0, 611, 0,     // 0x80
    0, 222, 222, 333, 333, 350, 556, 1000, 333, 1000, 500, 333, 944, 0, 500, 667,    // 0x90
    278, 333, 556, 556, 556, 556, 260, 556, 333, 737, 370, 556, 584, 333, 737, 333, // 0xA0
    400, 584, 333, 333, 333, 556, 537, 278, 333, 333, 365, 556, 834, 834, 834, 611, // 0xB0
    667, 667, 667, 667, 667, 667, 1000, 722, 667, 667, 667, 667, 278, 278, 278, 278, // 0xC0
    722, 722, 778, 778, 778, 778, 778, 584, 778, 722, 722, 722, 722, 667, 667, 611, // 0xD0
    556, 556, 556, 556, 556, 556, 889, 500, 556, 556, 556, 556, 278, 278, 278, 278, // 0xE0
    556, 556, 556, 556, 556, 556, 556, 584, 611, 556, 556, 556, 556, 500, 556, 500, // 0xF0
];

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn text_width(s: &str, style: Style) -> f32 {
        s.chars().map(char_width).sum::<f32>() * style.size / 1000.0
    }

    #[test]
    fn every_encodable_character_has_a_width() {
        for code in 0x20u32..=0x17f {
            let Some(c) = char::from_u32(code) else {
                continue;
            };
            if win_ansi(c).is_some() {
                assert!(char_width(c) > 0.0, "{c:?}");
            }
        }
        for c in "€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ".chars() {
            assert!(char_width(c) > 0.0, "{c:?}");
        }
    }

    #[test]
    fn normalize_keeps_latin_1_and_replaces_the_rest() {
        assert_eq!(normalize("Café – “ok” … 5 €"), "Café – “ok” … 5 €");
        assert_eq!(
            normalize("Łódź, Dvořák, İstanbul"),
            "Lódz, Dvorák, Istanbul"
        );
        assert_eq!(normalize("e\u{301}\u{200b}x"), "ex");
        assert_eq!(normalize("a\r\nb\rc\td"), "a\nb\nc    d");
        assert_eq!(normalize("Привет 你好 🙂"), "?????? ?? ?");
        assert_eq!(normalize("ﬁne \u{2212}1 \u{2003}x"), "fine -1  x");
        assert_eq!(normalize("soft\u{ad}hyphen\u{7}"), "softhyphen");
    }

    #[test]
    fn wrap_fits_the_page_width_and_keeps_every_word() {
        let para = "The quick brown fox jumps over the lazy dog. ".repeat(20);
        let lines = wrap(&para, BODY);
        assert!(lines.len() > 3, "{lines:?}");
        for line in &lines {
            assert!(text_width(line, BODY) <= TEXT_WIDTH, "{line:?}");
            assert!(!line.starts_with(' ') && !line.ends_with(' '), "{line:?}");
        }
        assert_eq!(
            lines.join(" ").split_whitespace().collect::<Vec<_>>(),
            para.split_whitespace().collect::<Vec<_>>()
        );
    }

    #[test]
    fn wrap_breaks_a_word_wider_than_a_line() {
        let word = "W".repeat(200);
        let lines = wrap(&word, BODY);
        assert!(lines.len() > 1);
        assert!(lines.iter().all(|l| text_width(l, BODY) <= TEXT_WIDTH));
        assert_eq!(lines.concat(), word);
    }

    #[test]
    fn wrap_keeps_indentation_and_empty_lines() {
        assert_eq!(wrap("    indented", BODY), vec!["    indented"]);
        assert_eq!(wrap("", BODY), vec![""]);
    }

    #[test]
    fn render_paginates_and_numbers_pages() {
        let body = (1..=200)
            .map(|i| format!("Line {i}"))
            .collect::<Vec<_>>()
            .join("\n");
        let pdf = render_text("Title", &body).unwrap();
        assert!(pdf.starts_with(b"%PDF-1.4"));
        let doc = Document::load_mem(&pdf).unwrap();
        let pages = doc.get_pages();
        assert!(pages.len() >= 5, "{}", pages.len());
        let last = u32::try_from(pages.len()).unwrap();
        let text = doc.extract_text(&[last]).unwrap();
        assert!(text.contains("Line 200"), "{text}");
        assert!(text.contains(&format!("Page {last} of {last}")), "{text}");
        let info = doc.trailer.get_deref(b"Info", &doc).unwrap();
        let title = info.as_dict().unwrap().get(b"Title").unwrap();
        assert_eq!(lopdf::decode_text_string(title).unwrap(), "Title");
    }

    #[test]
    fn render_of_nothing_is_one_page() {
        let pdf = render_text("", "").unwrap();
        let doc = Document::load_mem(&pdf).unwrap();
        assert_eq!(doc.get_pages().len(), 1);
    }

    #[test]
    fn render_refuses_a_book() {
        let body = "x\n".repeat(50 * MAX_RENDER_PAGES as usize);
        assert_eq!(
            render_text("", &body),
            Err(PdfError::TooManyPages {
                limit: MAX_RENDER_PAGES
            })
        );
    }
}
