//! SSE frames, encoded once per event: a broadcast to a thousand
//! subscribers clones a reference count, never the bytes.

use bytes::{BufMut, Bytes, BytesMut};

/// One encoded SSE frame (`event:`, `id:`, `data:` lines and the blank
/// line), or a comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame(pub Bytes);

impl Frame {
    /// A named event; `data` may span lines (each becomes a `data:` line).
    pub fn event(name: &str, id: Option<&str>, data: &str) -> Frame {
        let mut buf = BytesMut::with_capacity(name.len() + data.len() + 32);
        buf.put_slice(b"event: ");
        buf.put_slice(name.as_bytes());
        buf.put_u8(b'\n');
        if let Some(id) = id {
            buf.put_slice(b"id: ");
            buf.put_slice(id.as_bytes());
            buf.put_u8(b'\n');
        }
        for line in data.split('\n') {
            buf.put_slice(b"data: ");
            buf.put_slice(line.trim_end_matches('\r').as_bytes());
            buf.put_u8(b'\n');
        }
        buf.put_u8(b'\n');
        Frame(buf.freeze())
    }

    /// The keep-alive comment, shared and never allocated.
    pub fn keep_alive() -> Frame {
        Frame(Bytes::from_static(b": ka\n\n"))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_follow_the_sse_format() {
        let f = Frame::event("message.created", Some("7"), "{\"a\":1}");
        assert_eq!(
            &f.0[..],
            b"event: message.created\nid: 7\ndata: {\"a\":1}\n\n"
        );
        let multi = Frame::event("x", None, "a\nb");
        assert_eq!(&multi.0[..], b"event: x\ndata: a\ndata: b\n\n");
        assert_eq!(&Frame::keep_alive().0[..], b": ka\n\n");
    }
}
