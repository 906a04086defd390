//! SMS segment counting (3GPP TS 23.038 / 23.040): a text that fits the
//! GSM 7-bit default alphabet (with its extension table, whose characters
//! take an escape and so count twice) is 160 septets in one segment, 153
//! per segment when concatenated; anything else is UCS-2: 70 UTF-16 code
//! units in one segment, 67 per segment when concatenated. An escape pair
//! or a surrogate pair is never split between two segments. RCS is counted
//! as an SMS of the same content (rule 9).

/// The GSM 7-bit default alphabet (each one septet; ESC left out).
const GSM_BASIC: &str = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà";
/// The extension table (each ESC plus one septet: two).
const GSM_EXTENSION: &str = "^{}\\[~]|€\u{0C}";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Gsm7,
    Ucs2,
}

impl Encoding {
    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::Gsm7 => "gsm7",
            Encoding::Ucs2 => "ucs2",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count {
    pub encoding: Encoding,
    pub segments: u32,
}

/// Septets of `c` in GSM-7, or `None` when it is outside the alphabet.
fn gsm_septets(c: char) -> Option<u32> {
    if GSM_BASIC.contains(c) {
        Some(1)
    } else if GSM_EXTENSION.contains(c) {
        Some(2)
    } else {
        None
    }
}

/// Units of each character in order, and the single and multipart sizes.
fn pack(units: &[u32], single: u32, part: u32) -> u32 {
    let total: u32 = units.iter().sum();
    if total <= single {
        return 1;
    }
    // Greedy fill: a character that does not fit whole starts a new part.
    let (mut parts, mut used) = (1, 0);
    for &u in units {
        if used + u > part {
            parts += 1;
            used = 0;
        }
        used += u;
    }
    parts
}

/// Segments of `text` (at least one, also for an empty text).
pub fn count(text: &str) -> Count {
    let gsm: Option<Vec<u32>> = text.chars().map(gsm_septets).collect();
    match gsm {
        Some(units) => Count {
            encoding: Encoding::Gsm7,
            segments: pack(&units, 160, 153),
        },
        None => {
            let units: Vec<u32> = text.chars().map(|c| c.len_utf16() as u32).collect();
            Count {
                encoding: Encoding::Ucs2,
                segments: pack(&units, 70, 67),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segs(s: &str) -> (Encoding, u32) {
        let c = count(s);
        (c.encoding, c.segments)
    }

    #[test]
    fn gsm7_fits_160_then_153_per_segment() {
        assert_eq!(segs(&"a".repeat(160)), (Encoding::Gsm7, 1));
        assert_eq!(segs(&"a".repeat(161)), (Encoding::Gsm7, 2));
        assert_eq!(segs(&"a".repeat(306)), (Encoding::Gsm7, 2));
        assert_eq!(segs(&"a".repeat(307)), (Encoding::Gsm7, 3));
        assert_eq!(segs(&"a".repeat(1600)), (Encoding::Gsm7, 11));
        assert_eq!(segs("Hello @£$ ÄÖÑÜ"), (Encoding::Gsm7, 1));
    }

    #[test]
    fn gsm7_extension_characters_count_double() {
        // 80 euro signs are 160 septets: one segment; 81 are two.
        assert_eq!(segs(&"€".repeat(80)), (Encoding::Gsm7, 1));
        assert_eq!(segs(&"€".repeat(81)), (Encoding::Gsm7, 2));
        assert_eq!(
            segs(&format!("{}{}", "a".repeat(159), "[")),
            (Encoding::Gsm7, 2)
        );
        // An escape pair is not split: 152 septets, then '{' starts part 2.
        assert_eq!(
            segs(&format!("{}{{{}", "a".repeat(152), "a".repeat(8))),
            (Encoding::Gsm7, 2)
        );
        assert_eq!(
            segs(&format!("{}{{{}", "a".repeat(152), "a".repeat(152))),
            (Encoding::Gsm7, 3)
        );
    }

    #[test]
    fn ucs2_fits_70_then_67_per_segment() {
        assert_eq!(segs(&"é".repeat(10)), (Encoding::Gsm7, 1));
        assert_eq!(segs(&"ж".repeat(70)), (Encoding::Ucs2, 1));
        assert_eq!(segs(&"ж".repeat(71)), (Encoding::Ucs2, 2));
        assert_eq!(segs(&"ж".repeat(134)), (Encoding::Ucs2, 2));
        assert_eq!(segs(&"ж".repeat(135)), (Encoding::Ucs2, 3));
        // One character outside GSM-7 makes the whole text UCS-2.
        assert_eq!(segs(&format!("{}ç", "a".repeat(69))), (Encoding::Ucs2, 1));
        assert_eq!(segs(&format!("{}ç", "a".repeat(70))), (Encoding::Ucs2, 2));
        assert_eq!(segs(&"ж".repeat(1600)), (Encoding::Ucs2, 24));
    }

    #[test]
    fn surrogate_pairs_count_two_and_are_not_split() {
        assert_eq!(segs(&"😀".repeat(35)), (Encoding::Ucs2, 1));
        assert_eq!(segs(&"😀".repeat(36)), (Encoding::Ucs2, 2));
        // 66 units then an emoji (2) does not fit in 67: a new part.
        assert_eq!(
            segs(&format!("{}😀{}", "ж".repeat(66), "ж".repeat(4))),
            (Encoding::Ucs2, 2)
        );
    }
}
